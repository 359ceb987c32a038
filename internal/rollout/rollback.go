package rollout

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// With onFailure: Rollback, a wave that fails past its budget takes the
// target revision back from every cluster it reached, last wave first:
// status.rollbackWave is the wave going back, and the Planner holds the
// target off its clusters and those of later waves, so the hub's fallback
// serves them the stable revision again. The next (earlier) wave goes back
// once this one serves the stable revision healthily, or its progress
// deadline has passed (a dead spoke must not keep the rest on a failed
// revision). The rollout ends RolledBack and stays so until a new revision
// or spec.rollbackTo.

// failWave ends the wave in progress, which failed past its budget for
// why: the rollout stops (Pause), or starts rolling back (Rollback) when
// there is a stable revision to go back to.
func failWave(now metav1.Time, st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, why string) []event {
	st.Message = fmt.Sprintf("wave %q not healthy within %s: %s", waveName(spec, st.Wave), deadline(spec), why)
	evs := []event{{"Warning", "WaveFailed", st.Message}}
	if manual(st) {
		// A rollback is not rolled back: it stops where it is.
		st.Phase = fgv1alpha1.RolloutFailed
		return evs
	}
	if spec.OnFailure != fgv1alpha1.OnFailureRollback || st.StableRevision <= 0 || st.StableRevision == st.TargetRevision {
		st.Phase = fgv1alpha1.RolloutFailed
		return evs
	}
	st.Phase, st.RollbackWave, st.RollbackReason = fgv1alpha1.RolloutRollingBack, ptrTo(st.Wave), truncateReason(st.Message)
	st.WaveStarted, st.HealthySince, st.AwaitingApproval = &now, nil, ""
	st.Moving, st.Moved = nil, nil
	st.Message = fmt.Sprintf("rolling revision %d back to revision %d, from wave %q: %s",
		st.TargetRevision, st.StableRevision, waveName(spec, st.Wave), st.RollbackReason)
	return append(evs, event{"Warning", "RollingBack", st.Message})
}

// rollBack moves a rollback on: once the wave going back serves the
// stable revision healthily (or its deadline passed), the wave before it
// goes back; after the first wave, the rollout is RolledBack.
func rollBack(now metav1.Time, st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, waves map[string]int32, obs map[string]Observation) []event {
	var evs []event
	for {
		w := *st.RollbackWave
		if st.WaveStarted == nil {
			st.WaveStarted = &now
		}
		bad := withoutFailed(unhealthy(spec, st.StableRevision, w, waves, obs), st.Failed)
		if len(bad) > 0 && now.Sub(st.WaveStarted.Time) <= deadline(spec) {
			st.Message = fmt.Sprintf("rolling wave %q back to revision %d: waits for %s (%s)",
				waveName(spec, w), st.StableRevision, explain(bad), st.RollbackReason)
			return evs
		}
		if len(bad) > 0 {
			evs = append(evs, event{"Warning", "RollbackWaveUnhealthy", fmt.Sprintf(
				"wave %q not healthy on revision %d within %s, rolling back the wave before it: %s",
				waveName(spec, w), st.StableRevision, deadline(spec), explain(bad))})
		} else {
			evs = append(evs, event{"Normal", "WaveRolledBack", fmt.Sprintf("wave %q serves revision %d again", waveName(spec, w), st.StableRevision)})
		}
		if w == 0 {
			break
		}
		st.RollbackWave, st.WaveStarted = ptrTo(w-1), &now
	}
	st.Phase, st.WaveStarted = fgv1alpha1.RolloutRolledBack, nil
	st.Message = fmt.Sprintf("revision %d rolled back to revision %d: %s", st.TargetRevision, st.StableRevision, st.RollbackReason)
	return append(evs, event{"Warning", "RolledBack", st.Message})
}

// rollingBack reports whether onFailure: Rollback has taken (or is
// taking) the status's target back.
func rollingBack(st *fgv1alpha1.GraphRolloutStatus) bool {
	return st.RollbackWave != nil
}

// rollbackHolding fills in, during and after an automatic rollback, the
// wave name and the clusters keeping the wave going back from serving the
// stable revision healthily; it reports whether it did.
func rollbackHolding(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, waves map[string]int32, obs map[string]Observation) bool {
	if !rollingBack(st) {
		return false
	}
	st.WaveName, st.HoldingBack = "done", nil
	if st.Phase == fgv1alpha1.RolloutRollingBack {
		st.WaveName = waveName(spec, *st.RollbackWave)
		st.HoldingBack = withoutFailed(unhealthy(spec, st.StableRevision, *st.RollbackWave, waves, obs), st.Failed)
	}
	return true
}

// backTo is, for a plan, the stable revision an automatic rollback sends
// clusters back to and the wave from which it does (0, 0: none).
func backTo(st fgv1alpha1.GraphRolloutStatus) (int64, int32) {
	if st.RollbackWave == nil {
		return 0, 0
	}
	return st.StableRevision, *st.RollbackWave
}

// clearRollback forgets an automatic rollback or a manual one in waves (a
// new target, or another manual rollback, replaces it).
func clearRollback(st *fgv1alpha1.GraphRolloutStatus) {
	st.RollbackWave, st.RollbackReason, st.ManualRollback = nil, "", nil
	st.Moving, st.Moved = nil, nil
}

// truncateReason bounds a reason carried in status across a rollback.
func truncateReason(s string) string {
	const limit = 1024
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}

func ptrTo[T any](v T) *T { return &v }

// rolledBackTo is the stable revision an automatic rollback sends the
// named cluster back to under plan pl (0: it sends it nowhere).
func (p *Planner) rolledBackTo(pl *plan, graphName, cluster string) int64 {
	if pl.back == 0 {
		return 0
	}
	if _, wave, err := p.locate(graphName, cluster); err != nil || wave < pl.backFrom {
		return 0
	}
	return pl.back
}
