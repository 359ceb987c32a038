package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// manualFleet is five clusters in three waves: canary (a), early (b, c,
// one at a time) and late (d, e, behind an approval).
func manualFleet() (*fgv1alpha1.GraphRollout, *simFleet) {
	one := intstr.FromInt32(1)
	ro := &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{
		Graph: "g", ProgressDeadlineSeconds: 30,
		Waves: []fgv1alpha1.Wave{
			{Name: "canary", Clusters: 1},
			{Name: "early", Clusters: 2, MaxConcurrency: &one},
			{Name: "late", Percent: 100, Approval: fgv1alpha1.ApprovalRequired},
		},
	}}
	return ro, newSimFleet(map[string]int32{"a": 0, "b": 1, "c": 1, "d": 2, "e": 2}, 2)
}

// rolledOut brings ro to revision 2 complete on f (the first look sees
// revision 2 everywhere).
func rolledOut(t *testing.T, ro *fgv1alpha1.GraphRollout, f *simFleet, t0 metav1.Time) {
	t.Helper()
	step(t0, ro, 2, f.waves, f.observe())
	require.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase)
	require.Equal(t, int64(2), ro.Status.StableRevision)
}

// healthyOn reports whether every cluster of wave w serves rev healthily.
func healthyOn(f *simFleet, w int32, rev int64) bool {
	for name, cw := range f.waves {
		if cw == w && (f.serves[name] != rev || !f.healthy(name)) {
			return false
		}
	}
	return true
}

// spec.rollbackTo with rollbackStrategy Waves rolls the older revision out
// wave by wave, first wave first: no cluster of a wave takes it while the
// wave before is not healthy on it, early moves one cluster at a time,
// late waits for its approval; a revision published meanwhile reaches no
// cluster; the rollback ends RolledBack (reason Manual) with the older
// revision stable, and clearing rollbackTo rolls the latest out again
// from the first wave.
func TestManualRollbackInWavesGoesFirstWaveFirst(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro, f := manualFleet()
	rolledOut(t, ro, f, t0)

	ro.Spec.RollbackTo, ro.Spec.RollbackStrategy = 1, fgv1alpha1.RollbackInWaves
	evs := step(metav1.NewTime(t0.Add(time.Second)), ro, 2, f.waves, f.observe())
	st := ro.Status
	require.Equal(t, fgv1alpha1.RolloutRollingBack, st.Phase, st.Message)
	require.NotNil(t, st.ManualRollback)
	assert.Equal(t, fgv1alpha1.ManualRollback{Revision: 1, From: 2, Wave: 0, WaveName: "canary", Started: metav1.NewTime(t0.Add(time.Second))}, *st.ManualRollback)
	assert.Equal(t, fgv1alpha1.RollbackReasonManual, st.RollbackReason)
	assert.Equal(t, int64(1), st.TargetRevision)
	assert.Equal(t, int64(2), st.StableRevision, "the revision the fleet stood on stays stable during the rollback")
	assert.Equal(t, []string{"ManualRollbackStarted"}, reasons(evs))
	assert.Contains(t, st.Message, "manual rollback to revision 1: ")

	p := planOf(ro)
	assert.NoError(t, p.decideOn("a", 1, 0), "the first wave goes first")
	assert.ErrorIs(t, p.decideOn("b", 1, 1), ErrHeldBack)
	assert.ErrorIs(t, p.decideOn("d", 1, 2), ErrHeldBack)
	assert.ErrorIs(t, p.decideOn("a", 2, 0), ErrHeldBack, "only the revision rolled back to is offered")
	assert.ErrorIs(t, p.decideOn("a", 3, 0), ErrHeldBack, "a revision published meanwhile reaches no cluster")

	approvedAt := 0
	for i := 2; i < 80 && ro.Status.Phase != fgv1alpha1.RolloutRolledBack; i++ {
		now := metav1.NewTime(t0.Add(time.Duration(i) * time.Second))
		evs = append(evs, step(now, ro, 3, f.waves, f.observe())...)
		f.apply(ro, 1)
		for w := int32(1); w < 3; w++ {
			for name, cw := range f.waves {
				if cw == w && f.serves[name] == 1 {
					require.True(t, healthyOn(f, w-1, 1), "step %d: %s of wave %d serves revision 1 while wave %d is not healthy on it: %v", i, name, w, w-1, f.serves)
				}
			}
		}
		assert.LessOrEqual(t, len(movingOf(f, 1, "b", "c")), 1, "step %d: early moves one cluster at a time", i)
		if ro.Status.AwaitingApproval == "late" && approvedAt == 0 {
			assert.Equal(t, fgv1alpha1.RolloutRollingBack, ro.Status.Phase)
			assert.Equal(t, "late", ro.Status.ManualRollback.WaveName)
			assert.Equal(t, int64(2), f.serves["d"], "late waits for its approval")
			approvedAt = i
			ro.Annotations = map[string]string{fgv1alpha1.AnnotationApprove: "late"}
		}
	}
	st = ro.Status
	require.Equal(t, fgv1alpha1.RolloutRolledBack, st.Phase, st.Message)
	assert.NotZero(t, approvedAt, "late waited for approval")
	assert.Equal(t, map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}, f.serves)
	assert.Equal(t, int64(1), st.StableRevision)
	assert.Equal(t, fgv1alpha1.RollbackReasonManual, st.RollbackReason)
	assert.Equal(t, int32(3), st.ManualRollback.Wave)
	assert.Equal(t, "done", st.ManualRollback.WaveName)
	assert.Equal(t, "rolled back to revision 1, wave by wave (manual, from revision 2)", st.Message)
	rs := reasons(evs)
	assert.Equal(t, 3, count(rs, "WaveRolledBack"), "one event per wave: %v", rs)
	assert.Contains(t, rs, "Approved")
	assert.Equal(t, "RolledBack", rs[len(rs)-1])

	// It stays rolled back, and revision 3 waits for rollbackTo to clear.
	assert.Empty(t, step(metav1.NewTime(t0.Add(time.Hour)), ro, 3, f.waves, f.observe()))
	assert.ErrorIs(t, planOf(ro).decideOn("a", 3, 0), ErrHeldBack)

	ro.Spec.RollbackTo, ro.Annotations = 0, nil
	evs = step(metav1.NewTime(t0.Add(time.Hour+time.Second)), ro, 3, f.waves, f.observe())
	assert.Equal(t, fgv1alpha1.RolloutProgressing, ro.Status.Phase)
	assert.Equal(t, int64(3), ro.Status.TargetRevision)
	assert.Equal(t, int64(1), ro.Status.StableRevision)
	assert.Equal(t, int32(0), ro.Status.Wave)
	assert.Nil(t, ro.Status.ManualRollback)
	assert.Empty(t, ro.Status.RollbackReason)
	assert.Contains(t, reasons(evs), "RolloutStarted")
}

func movingOf(f *simFleet, rev int64, names ...string) []string {
	var out []string
	for _, name := range names {
		if f.serves[name] == rev && !f.healthy(name) {
			out = append(out, name)
		}
	}
	return out
}

func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

// The manual rollback's cursor is its own: a hub that restarts reads
// status.manualRollback.wave back and resumes at that wave, whatever
// status.wave says; pause holds it there and unpausing goes on rolling
// back.
func TestManualRollbackResumesAtItsCursor(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro, f := manualFleet()
	rolledOut(t, ro, f, t0)
	ro.Spec.RollbackTo, ro.Spec.RollbackStrategy = 1, fgv1alpha1.RollbackInWaves
	for i := 1; i < 20 && (ro.Status.ManualRollback == nil || ro.Status.ManualRollback.Wave < 1); i++ {
		step(metav1.NewTime(t0.Add(time.Duration(i)*time.Second)), ro, 2, f.waves, f.observe())
		f.apply(ro, 1)
	}
	require.Equal(t, int32(1), ro.Status.ManualRollback.Wave)

	// A restart: only the status is left, and status.wave is not trusted.
	restarted := ro.DeepCopy()
	restarted.Status.Wave = 0
	step(metav1.NewTime(t0.Add(time.Minute)), restarted, 2, f.waves, f.observe())
	assert.Equal(t, int32(1), restarted.Status.Wave)
	assert.Equal(t, "early", restarted.Status.WaveName)
	assert.NoError(t, planOf(restarted).decideOn("a", 1, 0), "the wave gone back keeps revision 1")
	assert.ErrorIs(t, planOf(restarted).decideOn("d", 1, 2), ErrHeldBack)

	ro.Spec.Paused = true
	step(metav1.NewTime(t0.Add(time.Minute)), ro, 2, f.waves, f.observe())
	assert.Equal(t, fgv1alpha1.RolloutPaused, ro.Status.Phase)
	assert.Equal(t, int32(1), ro.Status.ManualRollback.Wave)
	ro.Spec.Paused = false
	evs := step(metav1.NewTime(t0.Add(2*time.Minute)), ro, 2, f.waves, f.observe())
	assert.Equal(t, fgv1alpha1.RolloutRollingBack, ro.Status.Phase)
	assert.Contains(t, reasons(evs), "Resumed")
}

// A wave of the rollback that stays unhealthy on the older revision
// (health judged on that revision only) stops the rollback past its
// budget: phase Failed, even with onFailure Rollback (a rollback is not
// rolled back); within its budget the cluster is listed failed and keeps
// the older revision. The resume annotation goes on rolling back.
func TestManualRollbackFailsWithoutRollingBackTheRollback(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro, f := manualFleet()
	ro.Spec.OnFailure = fgv1alpha1.OnFailureRollback
	budget := intstr.FromInt32(1)
	ro.Spec.Waves[1].MaxFailures = &budget
	rolledOut(t, ro, f, t0)
	ro.Spec.RollbackTo, ro.Spec.RollbackStrategy = 1, fgv1alpha1.RollbackInWaves
	f.broken["b"], f.broken["a"] = 1, 1
	var evs []event
	for i := 1; i < 80 && ro.Status.Phase != fgv1alpha1.RolloutFailed; i++ {
		evs = append(evs, step(metav1.NewTime(t0.Add(time.Duration(i)*time.Second)), ro, 2, f.waves, f.observe())...)
		f.apply(ro, 1)
	}
	require.Equal(t, fgv1alpha1.RolloutFailed, ro.Status.Phase)
	assert.Nil(t, ro.Status.RollbackWave, "no automatic rollback of a manual one")
	assert.Contains(t, ro.Status.Message, `manual rollback to revision 1: wave "canary" not healthy`)
	assert.Equal(t, int64(2), f.serves["b"], "the next wave did not start")
	assert.Contains(t, reasons(evs), "WaveFailed")

	delete(f.broken, "a")
	ro.Annotations = map[string]string{fgv1alpha1.AnnotationResume: "now"}
	for i := 1; i < 200 && ro.Status.Phase != fgv1alpha1.RolloutRolledBack; i++ {
		step(metav1.NewTime(t0.Add(time.Minute+time.Duration(i)*time.Second)), ro, 2, f.waves, f.observe())
		f.apply(ro, 1)
		if ro.Status.AwaitingApproval != "" {
			ro.Annotations[fgv1alpha1.AnnotationApprove] = "1"
		}
	}
	require.Equal(t, fgv1alpha1.RolloutRolledBack, ro.Status.Phase, ro.Status.Message)
	require.Len(t, ro.Status.Failed, 1)
	assert.Equal(t, fgv1alpha1.RolloutCluster{Name: "b", Wave: 1, Revision: 1, Message: "0 of 1 instances Ready, 100% needed"}, ro.Status.Failed[0])
	assert.Equal(t, int64(1), f.serves["b"], "a cluster failed within the budget keeps the revision rolled back to")
}

// Without rollbackStrategy (or with AllAtOnce) rollbackTo moves every
// placed cluster at once, as before.
func TestRollbackToIsAllAtOnceByDefault(t *testing.T) {
	for _, strategy := range []string{"", fgv1alpha1.RollbackAllAtOnce} {
		t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		ro, f := manualFleet()
		rolledOut(t, ro, f, t0)
		ro.Spec.RollbackTo, ro.Spec.RollbackStrategy = 1, strategy
		step(metav1.NewTime(t0.Add(time.Second)), ro, 2, f.waves, f.observe())
		assert.Equal(t, fgv1alpha1.RolloutRolledBack, ro.Status.Phase, strategy)
		assert.Nil(t, ro.Status.ManualRollback)
		f.apply(ro, 1)
		assert.Equal(t, map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}, f.serves, strategy)
	}
}
