package rollout

import (
	"sync"
	"time"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// A restarted hub engages its clusters one at a time, and a wave is judged
// on the clusters engaged: right after a restart, a wave whose clusters
// had not all been engaged yet could pass on the few that were. So the
// Controller remembers, from its first look at each rollout, the clusters
// the stored status lists in the wave in progress, and until it engages
// one it counts it in its wave as unhealthy ("not engaged since the hub
// restarted"). It stays listed in status.clusters meanwhile, so another
// restart remembers it too.
//
// The wait is bounded. Such a cluster is overdue a progress deadline after
// the hub's first look (not earlier, even when the wave started long
// before: clusters take seconds to engage), and is then judged like any
// other cluster unhealthy at its deadline: within the wave's maxFailures
// it is listed failed (if it comes back, it serves the stable revision),
// past them the wave fails. Either way the hub forgets it: a cluster that
// really left the fleet holds its wave back one deadline at most, and a
// resumed wave goes on without it. The memory ends too when the wave in
// progress or the target changes.

// awaiting is the clusters of one rollout's wave in progress that the
// stored status listed at the Controller's first look and the hub has not
// engaged since.
type awaiting struct {
	target int64
	wave   int32
	since  time.Time // the first look
	names  map[string]bool
}

// restartMemory is, per GraphRollout looked at, the clusters of its wave
// in progress that a restarted hub awaits (nil once none: looked at).
type restartMemory struct {
	mu sync.Mutex
	m  map[string]*awaiting
}

// notEngaged is why a cluster a restarted hub awaits is not healthy.
const notEngaged = "not engaged since the hub restarted"

// awaitUnengaged adds to waves and obs the clusters of ro's wave in
// progress that the hub has not engaged since its first look at ro.
// engaged lists the engaged clusters.
func (r *restartMemory) awaitUnengaged(ro *fgv1alpha1.GraphRollout, engaged []Cluster, waves map[string]int32, obs map[string]Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*awaiting{}
	}
	st := &ro.Status
	a, looked := r.m[ro.Name]
	if !looked {
		a = awaitedAtFirstLook(st, ro.Spec)
		r.m[ro.Name] = a // nil too: looked at
	}
	if a == nil {
		return
	}
	if a.target != st.TargetRevision || a.wave != st.Wave || !judgingWave(st) {
		r.m[ro.Name] = nil
		return
	}
	for _, cl := range engaged {
		delete(a.names, cl.Name)
	}
	for name := range a.names {
		if _, ok := waves[name]; ok {
			continue
		}
		waves[name] = a.wave
		o := obs[name]
		o.Unengaged = a.since
		obs[name] = o
	}
}

// forgetJudged drops, after a step, the awaited clusters the step judged at
// their deadline: those now listed failed, or all once the rollout failed.
func (r *restartMemory) forgetJudged(ro *fgv1alpha1.GraphRollout) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.m[ro.Name]
	if a == nil {
		return
	}
	if ro.Status.Phase == fgv1alpha1.RolloutFailed {
		r.m[ro.Name] = nil
		return
	}
	for _, f := range ro.Status.Failed {
		delete(a.names, f.Name)
	}
}

// awaitedAtFirstLook is what a hub's first look at st remembers: the
// clusters listed in the wave in progress, but the failed and the held
// (nil: none).
func awaitedAtFirstLook(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec) *awaiting {
	if !judgingWave(st) || st.Wave >= waveCount(spec) {
		return nil
	}
	names := map[string]bool{}
	failed := clustersByName(st.Failed)
	for _, cl := range st.Clusters {
		if _, isFailed := failed[cl.Name]; cl.Wave == st.Wave && !cl.Held && !isFailed {
			names[cl.Name] = true
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &awaiting{target: st.TargetRevision, wave: st.Wave, since: time.Now(), names: names}
}

// judgingWave reports whether st's wave in progress is judged on its
// clusters' health: a rollout (or a manual rollback in waves) moving
// forward, not complete, failed or going back automatically.
func judgingWave(st *fgv1alpha1.GraphRolloutStatus) bool {
	switch st.Phase {
	case fgv1alpha1.RolloutProgressing, fgv1alpha1.RolloutPaused:
		return true
	case fgv1alpha1.RolloutRollingBack:
		return manual(st) && !rollingBack(st)
	}
	return false
}

// withinGrace drops from late the awaited clusters whose progress deadline,
// counted from the hub's first look, has not passed.
func withinGrace(now time.Time, spec fgv1alpha1.GraphRolloutSpec, late []fgv1alpha1.RolloutCluster, obs map[string]Observation) []fgv1alpha1.RolloutCluster {
	out := late[:0:0]
	for _, l := range late {
		since := obs[l.Name].Unengaged
		if !since.IsZero() && now.Sub(since) <= deadline(spec) {
			continue
		}
		out = append(out, l)
	}
	return out
}
