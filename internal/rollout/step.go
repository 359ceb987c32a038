package rollout

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// DefaultProgressDeadline is how long a wave may take to become healthy.
const DefaultProgressDeadline = 10 * time.Minute

// event is one event to record on a rollout.
type event struct{ typ, reason, note string }

func metaNow() metav1.Time { return metav1.Now().Rfc3339Copy() }

// step moves ro's status on, given the graph's latest revision, the
// placed clusters' waves and what the hub observes, and returns the events
// to record. It reads nothing else, so a restarted hub continues from the
// status alone.
func step(now metav1.Time, ro *fgv1alpha1.GraphRollout, latest int64, waves map[string]int32, obs map[string]Observation) []event {
	st, spec := &ro.Status, ro.Spec
	st.ObservedGeneration = ro.Generation
	n := waveCount(spec)
	target := latest
	if spec.RollbackTo > 0 {
		target = spec.RollbackTo
	}
	defer func() {
		fillClusters(st, spec, waves, obs)
		recordManual(st)
		if latest > 0 {
			pruneApprovals(st, spec, latest)
		}
	}()
	ignoreEarlyResume(ro)
	// An approval is for the target the approver saw: taken before a new
	// one replaces it.
	evs := takeApproval(now, ro, latest)
	switch {
	case target == 0:
		st.Message = fmt.Sprintf("graph %q is not registered, or its latest spec has no revision number yet (the hub retries recording it)", spec.Graph)
		return nil
	case st.TargetRevision == 0:
		// First sight: what serves now is taken as rolled out; the next
		// revision goes in waves (and so does a rollback in waves).
		first := target
		if inWaves(spec) && latest > 0 {
			first = latest
		}
		st.TargetRevision, st.StableRevision, st.Wave, st.Phase = first, first, n, fgv1alpha1.RolloutComplete
		st.Approvals = approvalsFor(st.Approvals, first+1) // the first target is not rolled out
		st.Message = fmt.Sprintf("revision %d serves every placed cluster", first)
		return nil
	case inWaves(spec) && !manualTo(st, target):
		evs = append(evs, startManual(now, st, spec, target)...)
	case allAtOnce(spec):
		if st.Phase != fgv1alpha1.RolloutRolledBack || st.TargetRevision != target {
			evs = append(evs, event{"Warning", "RolledBack", fmt.Sprintf("rolling back to revision %d on every placed cluster", target)})
		}
		st.TargetRevision, st.StableRevision, st.Wave, st.Phase = target, target, n, fgv1alpha1.RolloutRolledBack
		st.WaveStarted, st.HealthySince, st.AwaitingApproval, st.Failed = nil, nil, "", nil
		clearRollback(st)
		st.Message = fmt.Sprintf("rolled back to revision %d", target)
		return evs
	case st.TargetRevision != target:
		// After a rollback the stable revision is the one rolled back to
		// (spec.rollbackTo's is also the target).
		if st.Phase == fgv1alpha1.RolloutComplete {
			st.StableRevision = st.TargetRevision
		}
		clearRollback(st)
		st.TargetRevision, st.Wave, st.Phase = target, 0, fgv1alpha1.RolloutProgressing
		st.WaveStarted, st.HealthySince = &now, nil
		st.Approvals = approvalsFor(st.Approvals, target)
		st.Failed = nil
		evs = append(evs, event{"Normal", "RolloutStarted", fmt.Sprintf("rolling revision %d out in %d wave(s), from revision %d", target, n, st.StableRevision)})
	}
	st.Wave = min(st.Wave, n)
	manualCursor(st, n)
	switch {
	case st.Phase == fgv1alpha1.RolloutComplete, st.Phase == fgv1alpha1.RolloutRolledBack && (rollingBack(st) || manual(st)):
		return evs
	case st.Phase == fgv1alpha1.RolloutRollingBack && !manual(st):
		return append(evs, rollBack(now, st, spec, waves, obs)...)
	case spec.Paused:
		st.Phase, st.HealthySince = fgv1alpha1.RolloutPaused, nil
		st.Message = fmt.Sprintf("paused at wave %q", waveName(spec, st.Wave))
		return evs
	case st.Phase == fgv1alpha1.RolloutPaused:
		st.Phase, st.WaveStarted = movingPhase(st), &now
		evs = append(evs, event{"Normal", "Resumed", fmt.Sprintf("resumed at wave %q", waveName(spec, st.Wave))})
	case st.Phase == fgv1alpha1.RolloutFailed:
		resume := ro.Annotations[fgv1alpha1.AnnotationResume]
		if resume == "" || resume == st.Resumed {
			return evs
		}
		st.Resumed, st.Phase, st.WaveStarted = resume, movingPhase(st), &now
		evs = append(evs, event{"Normal", "Resumed", fmt.Sprintf("retrying wave %q", waveName(spec, st.Wave))})
	}
	return append(evs, progress(now, ro, waves, obs)...)
}

// progress checks the wave in progress and opens the next one once it has
// been healthy for the soak time; it fails the rollout past the deadline.
func progress(now metav1.Time, ro *fgv1alpha1.GraphRollout, waves map[string]int32, obs map[string]Observation) []event {
	st, spec := &ro.Status, ro.Spec
	n := waveCount(spec)
	var evs []event
	for st.Wave < n {
		if awaitsApproval(spec, st, st.Wave) {
			return append(evs, holdForApproval(st, spec)...)
		}
		st.AwaitingApproval = ""
		if st.WaveStarted == nil {
			st.WaveStarted = &now
		}
		bad := withoutFailed(unhealthy(spec, st.TargetRevision, st.Wave, waves, obs), st.Failed)
		pace(now, st, spec, waves, bad)
		if len(bad) > 0 {
			st.HealthySince = nil
			st.Message = waitMessage(st, spec, bad)
			late := withinGrace(now.Time, spec, overdue(now, st, spec, bad), obs)
			if len(late) == 0 {
				return evs
			}
			failed, ok := failWithinBudget(st, spec, late, waves)
			if !ok {
				why := explain(late)
				if recordsFull(st, late) {
					why = fmt.Sprintf("%d more clusters failed, past the %d failures a rollout records (maxFailures notwithstanding): %s",
						len(late), fgv1alpha1.MaxFailedClusters, why)
				}
				return append(evs, failWave(now, st, spec, why)...)
			}
			evs = append(evs, failed...)
			if len(late) < len(bad) {
				return evs // the others still move, or wait their turn
			}
		}
		if st.HealthySince == nil {
			st.HealthySince = &now
		}
		if soak := time.Duration(spec.Health.SoakSeconds) * time.Second; now.Sub(st.HealthySince.Time) < soak {
			st.Message = fmt.Sprintf("wave %q %s, soaking for %s", waveName(spec, st.Wave), waveHealth(st, st.Wave, waves), soak)
			return evs
		}
		evs = append(evs, waveDone(st, spec, waves))
		st.Wave++
		st.WaveStarted, st.HealthySince = &now, nil
		st.Moving, st.Moved = nil, nil
	}
	if manual(st) {
		return append(evs, finishManual(st)...)
	}
	st.Phase, st.StableRevision, st.WaveStarted, st.AwaitingApproval = fgv1alpha1.RolloutComplete, st.TargetRevision, nil, ""
	st.Message = fmt.Sprintf("revision %d serves every placed cluster", st.TargetRevision)
	if len(st.Failed) > 0 {
		st.Message = fmt.Sprintf("revision %d serves every placed cluster but those that failed it within their wave's budget: %s",
			st.TargetRevision, failedNames(st.Failed))
	}
	return append(evs, event{"Normal", "RolloutComplete", st.Message})
}

// waveHealth says how wave w of the moving clusters (waves) stands once
// it is healthy: every cluster, or every one but those that failed it
// within its budget, named.
func waveHealth(st *fgv1alpha1.GraphRolloutStatus, w int32, waves map[string]int32) string {
	failed := failedIn(st, w)
	if len(failed) == 0 {
		return "healthy"
	}
	size := waveSize(w, waves)
	return fmt.Sprintf("healthy on %d of its %d %s; failed within its budget: %s", size-len(failed), size, plural(size, "cluster"), failedNames(failed))
}

func deadline(spec fgv1alpha1.GraphRolloutSpec) time.Duration {
	if spec.ProgressDeadlineSeconds > 0 {
		return time.Duration(spec.ProgressDeadlineSeconds) * time.Second
	}
	return DefaultProgressDeadline
}

// unhealthy returns the clusters of wave w that are not healthy for
// revision target, each with why.
func unhealthy(spec fgv1alpha1.GraphRolloutSpec, target int64, w int32, waves map[string]int32, obs map[string]Observation) []fgv1alpha1.RolloutCluster {
	share := int32(100)
	if spec.Health.ReadyPercent != nil {
		share = *spec.Health.ReadyPercent
	}
	var out []fgv1alpha1.RolloutCluster
	for _, name := range sortedKeys(waves) {
		if waves[name] != w {
			continue
		}
		o := obs[name]
		why := ""
		switch {
		case !o.Unengaged.IsZero():
			why = notEngaged
		case o.Unhealthy != "":
			why = o.Unhealthy // another replica's verdict (replicas.go)
		case !o.Established && o.Message != "":
			why = o.Message
		case !o.Established:
			why = "CRD not established"
		case o.Revision != target:
			why = fmt.Sprintf("serves revision %d", o.Revision)
		case o.Replica != "":
			continue // healthy as its replica last judged it
		case o.Listed < 0:
			why = "instances cannot be listed"
		case o.Instances < o.Listed:
			why = fmt.Sprintf("%d of %d instances reconciled", o.Instances, o.Listed)
		case o.Unreconciled > 0:
			// With readyPercent 0 nothing else waits for the revision to
			// reconcile them: it has reported no error yet.
			total := max(o.Instances, o.Listed)
			why = fmt.Sprintf("%d of %d instances reconciled by revision %d", max(0, total-o.Unreconciled), total, target)
		default:
			if why = healthWhy(spec.Health, share, o); why == "" {
				continue
			}
		}
		out = append(out, fgv1alpha1.RolloutCluster{Name: name, Wave: w, Revision: o.Revision, Message: why})
	}
	return out
}

func explain(bad []fgv1alpha1.RolloutCluster) string {
	parts := make([]string, 0, min(len(bad), maxNamed))
	for _, b := range bad[:min(len(bad), maxNamed)] {
		parts = append(parts, b.Name+": "+b.Message)
	}
	return strings.Join(parts, "; ") + more(len(bad))
}

// maxNamed is how many clusters a message or event names: a wave of
// thousands would otherwise write every name into the status message,
// whose object etcd bounds (status.holdingBack lists them all).
const maxNamed = 10

// named joins the first maxNamed names, and says how many more there are.
func named(names []string) string {
	return strings.Join(names[:min(len(names), maxNamed)], ", ") + more(len(names))
}

// more says how many of n clusters a message did not name.
func more(n int) string {
	if n <= maxNamed {
		return ""
	}
	return fmt.Sprintf(" and %d more", n-maxNamed)
}

// fillClusters lists every placed cluster with its wave and revision, and
// the clusters holding the wave in progress back (all of them, and their
// count: the controller bounds the list it stores, listBounded).
func fillClusters(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, waves map[string]int32, obs map[string]Observation) {
	st.Clusters = st.Clusters[:0]
	for _, name := range sortedKeys(waves) {
		st.Clusters = append(st.Clusters, fgv1alpha1.RolloutCluster{Name: name, Wave: waves[name], Revision: obs[name].Revision})
	}
	if len(st.Clusters) == 0 {
		st.Clusters = nil
	}
	defer func() { st.HoldingBackCount = int32(len(st.HoldingBack)) }()
	if rollbackHolding(st, spec, waves, obs) {
		return
	}
	st.WaveName = "done"
	st.HoldingBack = nil
	if st.Wave < waveCount(spec) {
		st.WaveName = waveName(spec, st.Wave)
		st.HoldingBack = withoutFailed(unhealthy(spec, st.TargetRevision, st.Wave, waves, obs), st.Failed)
		turnsIn(st, spec, st.HoldingBack)
	} else if st.TargetRevision > 0 {
		// Past the last wave every placed cluster should serve the target,
		// but those that failed it.
		failed := clustersByName(st.Failed)
		for _, name := range sortedKeys(waves) {
			if _, ok := failed[name]; ok {
				continue
			}
			if bad := unhealthyOne(spec, st.TargetRevision, name, waves, obs); bad != nil {
				st.HoldingBack = append(st.HoldingBack, *bad)
			}
		}
	}
}

func unhealthyOne(spec fgv1alpha1.GraphRolloutSpec, target int64, name string, waves map[string]int32, obs map[string]Observation) *fgv1alpha1.RolloutCluster {
	bad := unhealthy(spec, target, waves[name], map[string]int32{name: waves[name]}, obs)
	if len(bad) == 0 {
		return nil
	}
	return &bad[0]
}

// ignoreEarlyResume marks an AnnotationResume value set while the rollout
// had not failed as seen: it resumes nothing, and must not retry a failure
// that comes later at once.
func ignoreEarlyResume(ro *fgv1alpha1.GraphRollout) {
	if ro.Status.Phase == fgv1alpha1.RolloutFailed {
		return
	}
	if v := ro.Annotations[fgv1alpha1.AnnotationResume]; v != "" {
		ro.Status.Resumed = v
	}
}
