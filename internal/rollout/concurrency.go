package rollout

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// A wave with maxConcurrency lets its clusters take the target revision a
// few at a time. The status keeps, for the wave in progress, the clusters
// moving (allowed the target, not healthy or failed yet, with since when)
// and those that moved (became healthy): the Planner lets exactly these
// serve the target, so a restarted hub lets no more move than the status
// says.

// limited reports whether wave w of spec has a maxConcurrency.
func limited(spec fgv1alpha1.GraphRolloutSpec, w int32) bool {
	return int(w) < len(spec.Waves) && spec.Waves[w].MaxConcurrency != nil
}

// concurrency is how many clusters of wave w may move at once: its
// maxConcurrency of the wave's size (a percent rounds up), at least 1.
func concurrency(spec fgv1alpha1.GraphRolloutSpec, w int32, size int) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(spec.Waves[w].MaxConcurrency, size, true)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// pace moves the limited wave in progress on: moving clusters that are
// healthy (not in bad) or failed have moved, and clusters that have not
// started, in name order, start while fewer than the wave's
// maxConcurrency move. A wave without maxConcurrency keeps no such record.
func pace(now metav1.Time, st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, waves map[string]int32, bad []fgv1alpha1.RolloutCluster) {
	if !limited(spec, st.Wave) {
		st.Moving, st.Moved = nil, nil
		return
	}
	var members []string
	isMember := map[string]bool{}
	for _, name := range sortedKeys(waves) {
		if waves[name] == st.Wave {
			members = append(members, name)
			isMember[name] = true
		}
	}
	unhealthy, failed := clustersByName(bad), clustersByName(st.Failed)
	moving := st.Moving[:0:0]
	moved := st.Moved[:0:0]
	// A cluster the status lists that is not among the wave's members now
	// may be one a restarted hub has not engaged yet: a moved one stays
	// moved, and a moving one keeps its turn until its progress deadline,
	// so that the clusters engaged first do not start in its place.
	for _, name := range st.Moved {
		if _, isBad := unhealthy[name]; isBad {
			// Unhealthy again: it moves (and counts) until it is healthy.
			moving = append(moving, fgv1alpha1.RolloutMove{Name: name, Since: now})
		} else {
			moved = append(moved, name)
		}
	}
	st.Moved = moved
	for _, m := range st.Moving {
		_, isFailed := failed[m.Name]
		_, isBad := unhealthy[m.Name]
		switch {
		case isFailed:
		case !isMember[m.Name]:
			if now.Sub(m.Since.Time) <= deadline(spec) {
				moving = append(moving, m)
			}
		case !isBad:
			st.Moved = append(st.Moved, m.Name)
		default:
			moving = append(moving, m)
		}
	}
	started := startedSet(st, moving)
	// A cluster that took the target before the wave had a limit (its
	// spec changed) is adopted as it is, not sent back.
	for _, name := range members {
		b, isBad := unhealthy[name]
		switch {
		case started[name]:
		case !isBad:
			st.Moved = append(st.Moved, name)
			started[name] = true
		case b.Revision == st.TargetRevision:
			moving = append(moving, fgv1alpha1.RolloutMove{Name: name, Since: now})
			started[name] = true
		}
	}
	limit := concurrency(spec, st.Wave, len(members))
	for _, name := range members {
		if len(moving) >= limit {
			break
		}
		if started[name] {
			continue
		}
		moving = append(moving, fgv1alpha1.RolloutMove{Name: name, Since: now})
		started[name] = true
	}
	st.Moving = moving
	if len(st.Moving) == 0 {
		st.Moving = nil
	}
	if len(st.Moved) == 0 {
		st.Moved = nil
	}
}

// overdue returns the clusters of bad whose progress deadline has passed:
// in a limited wave, the moving ones that started longer than the deadline
// ago (or before the wave last started, as a resume restarts it); else all
// of them once the wave started longer than the deadline ago.
func overdue(now metav1.Time, st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, bad []fgv1alpha1.RolloutCluster) []fgv1alpha1.RolloutCluster {
	late := func(since time.Time) bool {
		if st.WaveStarted != nil && since.Before(st.WaveStarted.Time) {
			since = st.WaveStarted.Time
		}
		return now.Sub(since) > deadline(spec)
	}
	if !limited(spec, st.Wave) {
		if st.WaveStarted == nil || !late(st.WaveStarted.Time) {
			return nil
		}
		return bad
	}
	unhealthy := clustersByName(bad)
	var out []fgv1alpha1.RolloutCluster
	for _, m := range st.Moving {
		if b, isBad := unhealthy[m.Name]; isBad && late(m.Since.Time) {
			out = append(out, b)
		}
	}
	return out
}

// startedSet is the set of the clusters of the wave in progress that have
// been let take the target: moving, moved or failed. A set, not a search
// of each list: a wave of thousands of clusters asks for each of them.
func startedSet(st *fgv1alpha1.GraphRolloutStatus, moving []fgv1alpha1.RolloutMove) map[string]bool {
	out := make(map[string]bool, len(moving)+len(st.Moved)+len(st.Failed))
	for _, m := range moving {
		out[m.Name] = true
	}
	for _, name := range st.Moved {
		out[name] = true
	}
	for _, f := range st.Failed {
		out[f.Name] = true
	}
	return out
}

// waitMessage says what the wave in progress waits for: in a limited wave,
// which clusters move and how many have not started.
func waitMessage(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, bad []fgv1alpha1.RolloutCluster) string {
	if !limited(spec, st.Wave) {
		names := make([]string, len(bad))
		for i, b := range bad {
			names[i] = b.Name
		}
		return fmt.Sprintf("wave %q waits for %s", waveName(spec, st.Wave), named(names))
	}
	names := make([]string, len(st.Moving))
	for i, m := range st.Moving {
		names[i] = m.Name
	}
	waiting, started := 0, startedSet(st, st.Moving)
	for _, b := range bad {
		if !started[b.Name] {
			waiting++
		}
	}
	return fmt.Sprintf("wave %q moves %s (maxConcurrency %s); %d not started", waveName(spec, st.Wave),
		named(names), spec.Waves[st.Wave].MaxConcurrency.String(), waiting)
}

// admitted reports whether the plan lets the named cluster of the wave in
// progress take the target now: always, but in a limited wave, where only
// the clusters the status lists as moving or moved may.
func (p *plan) admitted(cluster string) bool {
	return p.started == nil || p.started[cluster]
}

// startedClusters is the set of clusters of the limited wave in progress
// that may serve the target (nil: the wave is not limited).
func startedClusters(spec fgv1alpha1.GraphRolloutSpec, st fgv1alpha1.GraphRolloutStatus) map[string]bool {
	if !limited(spec, st.Wave) || st.Phase == fgv1alpha1.RolloutComplete {
		return nil
	}
	out := make(map[string]bool, len(st.Moving)+len(st.Moved))
	for _, m := range st.Moving {
		out[m.Name] = true
	}
	for _, name := range st.Moved {
		out[name] = true
	}
	return out
}

// turnsIn says, of the clusters in bad that have not started in the
// limited wave in progress, that they wait their turn rather than what
// they serve.
func turnsIn(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, bad []fgv1alpha1.RolloutCluster) {
	if !limited(spec, st.Wave) {
		return
	}
	started := startedSet(st, st.Moving)
	for i := range bad {
		if !started[bad[i].Name] {
			bad[i].Message = fmt.Sprintf("waits its turn (maxConcurrency %s), serves revision %d",
				spec.Waves[st.Wave].MaxConcurrency.String(), bad[i].Revision)
		}
	}
}
