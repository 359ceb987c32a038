package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

func threeWaveRollback(onFailure string) *fgv1alpha1.GraphRollout {
	return &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{
		Graph: "g", ProgressDeadlineSeconds: 10, OnFailure: onFailure,
		Waves: []fgv1alpha1.Wave{{Name: "canary", Clusters: 1}, {Name: "early", Clusters: 2}, {Name: "late", Percent: 100}},
	}}
}

// With onFailure Rollback, a revision that fails its second wave goes back
// to the stable revision on every cluster it reached, the failing wave
// first and the first wave last (each once the wave after it is healthy on
// the stable revision); the rollout ends RolledBack with the reason, the
// last wave never took the revision, and a new revision rolls out from the
// stable one again.
func TestRollbackTakesTheTargetBackInReverseWaveOrder(t *testing.T) {
	t0, ro, f := brokenWaveTwo()
	var evs []event
	backAt := map[string]int{}
	for i := 1; i < 40 && ro.Status.Phase != fgv1alpha1.RolloutRolledBack; i++ {
		evs = append(evs, step(metav1.NewTime(t0.Add(time.Duration(3*i)*time.Second)), ro, 2, f.waves, f.observe())...)
		f.apply(ro, 2)
		for name, rev := range f.serves {
			if _, seen := backAt[name]; !seen && rev == 1 && f.since[name] > 0 {
				backAt[name] = f.step
			}
		}
		assert.NotEqual(t, int64(2), f.serves["d"], "the last wave never takes the failed revision")
	}
	st := ro.Status
	require.Equal(t, fgv1alpha1.RolloutRolledBack, st.Phase, st.Message)
	assert.Equal(t, map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1}, f.serves)
	assert.Equal(t, int64(2), st.TargetRevision)
	assert.Equal(t, int64(1), st.StableRevision)
	assert.Contains(t, st.Message, `revision 2 rolled back to revision 1: wave "early" not healthy within 10s: c: 0 of 1 instances Ready`)
	assert.Equal(t, "done", st.WaveName)
	assert.Empty(t, st.HoldingBack)
	require.Contains(t, backAt, "a")
	assert.Less(t, backAt["b"], backAt["a"], "the failing wave goes back before the first")
	assert.Contains(t, reasons(evs), "WaveFailed")
	assert.Contains(t, reasons(evs), "RollingBack")
	assert.Contains(t, reasons(evs), "WaveRolledBack")
	assert.Equal(t, "RolledBack", evs[len(evs)-1].reason)

	// It stays rolled back: nothing takes revision 2 again.
	evs = step(metav1.NewTime(t0.Add(time.Hour)), ro, 2, f.waves, f.observe())
	f.apply(ro, 2)
	assert.Empty(t, evs)
	assert.Equal(t, map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1}, f.serves)

	// Revision 3 rolls out from revision 1.
	delete(f.broken, "c")
	for i := 1; i < 40 && !done(ro, 3); i++ {
		step(metav1.NewTime(t0.Add(time.Hour+time.Duration(3*i)*time.Second)), ro, 3, f.waves, f.observe())
		f.apply(ro, 3)
	}
	assert.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase, ro.Status.Message)
	assert.Nil(t, ro.Status.RollbackWave)
	assert.Empty(t, ro.Status.RollbackReason)
	assert.Equal(t, map[string]int64{"a": 3, "b": 3, "c": 3, "d": 3}, f.serves)
}

// A wave that does not come back healthy within the deadline does not
// keep the waves before it on the failed revision; onFailure Pause (the
// default) stops as before.
func TestRollbackGoesOnPastAnUnhealthyWaveAndPauseStops(t *testing.T) {
	t0, ro, f := brokenWaveTwo()
	var evs []event
	for i := 1; i < 40 && ro.Status.Phase != fgv1alpha1.RolloutRollingBack; i++ {
		step(metav1.NewTime(t0.Add(time.Duration(3*i)*time.Second)), ro, 2, f.waves, f.observe())
		f.apply(ro, 2)
	}
	require.Equal(t, fgv1alpha1.RolloutRollingBack, ro.Status.Phase)
	assert.Equal(t, int32(1), *ro.Status.RollbackWave)
	f.broken["c"] = 1 // it does not come back either
	for i := 1; i < 40 && ro.Status.Phase != fgv1alpha1.RolloutRolledBack; i++ {
		evs = append(evs, step(metav1.NewTime(t0.Add(time.Minute+time.Duration(3*i)*time.Second)), ro, 2, f.waves, f.observe())...)
		if ro.Status.Phase == fgv1alpha1.RolloutRollingBack && *ro.Status.RollbackWave == 1 {
			require.Len(t, ro.Status.HoldingBack, 1)
			assert.Equal(t, "c", ro.Status.HoldingBack[0].Name, "status names what holds the rollback")
			assert.Equal(t, "early", ro.Status.WaveName)
		}
		f.apply(ro, 2)
	}
	assert.Equal(t, fgv1alpha1.RolloutRolledBack, ro.Status.Phase)
	assert.Contains(t, reasons(evs), "RollbackWaveUnhealthy")
	assert.Equal(t, int64(1), f.serves["a"])

	paused := threeWaveRollback("")
	g := newSimFleet(map[string]int32{"a": 0, "b": 1, "c": 1, "d": 2}, 1)
	g.broken["c"] = 2
	step(t0, paused, 1, g.waves, g.observe())
	for i := 1; i < 40 && paused.Status.Phase != fgv1alpha1.RolloutFailed; i++ {
		step(metav1.NewTime(t0.Add(time.Duration(3*i)*time.Second)), paused, 2, g.waves, g.observe())
		g.apply(paused, 2)
	}
	assert.Equal(t, fgv1alpha1.RolloutFailed, paused.Status.Phase)
	assert.Nil(t, paused.Status.RollbackWave)
	assert.Equal(t, map[string]int64{"a": 2, "b": 2, "c": 2, "d": 1}, g.serves, "Pause keeps what moved")
}

// A manual rollbackTo during an automatic rollback takes over; the
// Planner sends the clusters an automatic rollback holds back to the
// stable revision through the fallback.
func TestManualRollbackReplacesAnAutomaticOne(t *testing.T) {
	ro := threeWaveRollback(fgv1alpha1.OnFailureRollback)
	ro.Status = fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutRollingBack, TargetRevision: 3, StableRevision: 2,
		Wave: 1, RollbackWave: ptrTo(int32(1)), RollbackReason: "x"}
	p := planOf(ro)
	assert.NoError(t, p.decideOn("a", 3, 0), "the first wave has not gone back yet")
	assert.ErrorIs(t, p.decideOn("b", 3, 1), ErrHeldBack)

	pl := NewPlanner(nil, func() []Cluster { return []Cluster{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}} })
	pl.set(map[string]*plan{"g": p})
	assert.Equal(t, int64(0), pl.FallBackTo("g", "a"))
	assert.Equal(t, int64(2), pl.FallBackTo("g", "b"))
	assert.Equal(t, int64(2), pl.FallBackTo("g", "d"))

	ro.Spec.RollbackTo = 1
	step(metav1.Now(), ro, 3, map[string]int32{"a": 0, "b": 1}, nil)
	assert.Equal(t, fgv1alpha1.RolloutRolledBack, ro.Status.Phase)
	assert.Nil(t, ro.Status.RollbackWave)
	assert.Equal(t, int64(1), ro.Status.TargetRevision)
}

func reasons(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.reason
	}
	return out
}

// brokenWaveTwo is a three-wave rollout with onFailure Rollback whose
// revision 1 is complete on a (wave 1), b and c (wave 2) and d (wave 3),
// where c will not take revision 2.
func brokenWaveTwo() (metav1.Time, *fgv1alpha1.GraphRollout, *simFleet) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro := threeWaveRollback(fgv1alpha1.OnFailureRollback)
	f := newSimFleet(map[string]int32{"a": 0, "b": 1, "c": 1, "d": 2}, 1)
	f.broken["c"] = 2
	step(t0, ro, 1, f.waves, f.observe())
	return t0, ro, f
}
