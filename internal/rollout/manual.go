package rollout

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// A manual rollback in waves (spec.rollbackTo with rollbackStrategy
// Waves) is a rollout of the older revision through the same waves, first
// wave first: the canary wave takes the move first, as it takes any
// revision, because the risk of a rollback is the move itself (a CRD
// reshaped, children rewritten) and the operator chose the revision, so
// nothing is known to be broken on the waves not reached yet. The
// automatic rollback goes last wave first instead because it undoes a
// failure, starting where the failure is.
//
// It reuses the wave machinery (approvals, maxConcurrency, health judged
// on the target revision, maxFailures, deadlines, pause and resume) with
// status.targetRevision set to spec.rollbackTo, and keeps its own record
// in status.manualRollback, whose wave is the cursor a restarted hub
// resumes from. The Planner lets spec.rollbackTo reach a cluster once its
// wave has started; every other revision is held back everywhere, so a
// cluster whose wave has not started keeps the revision it serves (the
// runtime offers spec.rollbackTo and the hub's fallback serves what the
// cluster's CRD was applied from), and a revision published meanwhile
// reaches none.

// inWaves reports whether spec rolls spec.rollbackTo back in waves.
func inWaves(spec fgv1alpha1.GraphRolloutSpec) bool {
	return spec.RollbackTo > 0 && spec.RollbackStrategy == fgv1alpha1.RollbackInWaves
}

// allAtOnce reports whether spec rolls spec.rollbackTo back at once.
func allAtOnce(spec fgv1alpha1.GraphRolloutSpec) bool {
	return spec.RollbackTo > 0 && !inWaves(spec)
}

// manual reports whether the status records a manual rollback in waves.
func manual(st *fgv1alpha1.GraphRolloutStatus) bool {
	return st.ManualRollback != nil
}

// manualTo reports whether the status records a manual rollback in waves
// to revision rev.
func manualTo(st *fgv1alpha1.GraphRolloutStatus, rev int64) bool {
	return manual(st) && st.ManualRollback.Revision == rev && st.TargetRevision == rev
}

// startManual starts rolling revision target back in waves from the first
// wave.
func startManual(now metav1.Time, st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, target int64) []event {
	if st.Phase == fgv1alpha1.RolloutComplete {
		st.StableRevision = st.TargetRevision
	}
	clearRollback(st)
	st.ManualRollback = &fgv1alpha1.ManualRollback{Revision: target, From: st.StableRevision, Started: now}
	st.RollbackReason = fgv1alpha1.RollbackReasonManual
	st.TargetRevision, st.Wave, st.Phase = target, 0, fgv1alpha1.RolloutRollingBack
	st.WaveStarted, st.HealthySince, st.AwaitingApproval = &now, nil, ""
	st.Approvals = approvalsFor(st.Approvals, target)
	st.Failed = nil
	return []event{{"Warning", "ManualRollbackStarted", fmt.Sprintf(
		"rolling back to revision %d in %d wave(s), first wave first, from revision %d (spec.rollbackTo)",
		target, waveCount(spec), st.StableRevision)}}
}

// movingPhase is the phase of a rollout whose waves move: RollingBack for
// a manual rollback in waves, else Progressing.
func movingPhase(st *fgv1alpha1.GraphRolloutStatus) string {
	if manual(st) {
		return fgv1alpha1.RolloutRollingBack
	}
	return fgv1alpha1.RolloutProgressing
}

// waveDone is the event for the wave in progress having taken the target.
func waveDone(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, waves map[string]int32) event {
	name, failed := waveName(spec, st.Wave), failedIn(st, st.Wave)
	serves := fmt.Sprintf("serves revision %d", st.TargetRevision)
	if len(failed) > 0 {
		size := waveSize(st.Wave, waves)
		serves = fmt.Sprintf("serves revision %d on %d of its %d %s; failed within its budget: %s",
			st.TargetRevision, size-len(failed), size, plural(size, "cluster"), failedNames(failed))
	}
	if manual(st) {
		return event{"Normal", "WaveRolledBack", fmt.Sprintf("wave %q rolled back to revision %d (manual rollback): it %s", name, st.TargetRevision, serves)}
	}
	return event{"Normal", "WaveComplete", fmt.Sprintf("wave %q %s", name, serves)}
}

// finishManual ends a manual rollback whose last wave is healthy: the
// revision rolled back to is the stable one now.
func finishManual(st *fgv1alpha1.GraphRolloutStatus) []event {
	st.Phase, st.StableRevision, st.WaveStarted, st.AwaitingApproval = fgv1alpha1.RolloutRolledBack, st.TargetRevision, nil, ""
	st.Message = fmt.Sprintf("rolled back to revision %d, wave by wave (manual, from revision %d)", st.TargetRevision, st.ManualRollback.From)
	return []event{{"Normal", "RolledBack", st.Message}}
}

// manualCursor makes the wave in progress the manual rollback's cursor,
// which a restarted hub reads back.
func manualCursor(st *fgv1alpha1.GraphRolloutStatus, n int32) {
	if manual(st) && st.Phase != fgv1alpha1.RolloutRolledBack {
		st.Wave = min(st.ManualRollback.Wave, n)
	}
}

// recordManual writes the wave in progress back into the manual
// rollback's record, and says in the message that it is a manual
// rollback.
func recordManual(st *fgv1alpha1.GraphRolloutStatus) {
	mr := st.ManualRollback
	if mr == nil {
		return
	}
	mr.Wave, mr.WaveName = st.Wave, st.WaveName
	prefix := fmt.Sprintf("manual rollback to revision %d: ", mr.Revision)
	if st.Phase != fgv1alpha1.RolloutRolledBack && st.Message != "" && !strings.HasPrefix(st.Message, prefix) {
		st.Message = prefix + st.Message
	}
}

// failedKeeps is the revision a cluster that fails its wave within the
// budget goes back to (or keeps): the stable revision, but in a manual
// rollback the revision rolled back to (the stable one is what the
// operator left).
func failedKeeps(st *fgv1alpha1.GraphRolloutStatus) int64 {
	if manual(st) {
		return st.TargetRevision
	}
	return st.StableRevision
}

// decideInWaves is the decision for revision rev on a cluster of wave
// wave while spec.rollbackTo goes back in waves.
func (p *plan) decideInWaves(rev int64, wave int32) error {
	to := p.spec.RollbackTo
	switch {
	case rev != to:
		return fmt.Errorf("%w: rolled back to revision %d, in waves", ErrHeldBack, to)
	case p.target != to:
		return fmt.Errorf("%w: the rollback to revision %d has not started", ErrHeldBack, to)
	case wave < p.wave || wave == p.wave && !p.awaiting:
		return nil
	}
	return fmt.Errorf("%w: the rollback to revision %d waits for wave %q", ErrHeldBack, rev, waveName(p.spec, wave))
}
