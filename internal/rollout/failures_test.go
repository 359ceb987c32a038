package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// Clusters still unhealthy at the deadline within the wave's maxFailures
// are listed as failed, held off the target, and the rollout goes on;
// one more than the budget fails the rollout as before.
func TestMaxFailuresLetsAWaveGoOnWithoutItsFailedClusters(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	waves := map[string]int32{"a": 0, "b": 0, "c": 0, "d": 0}
	obs := func(rev int64, bad ...string) map[string]Observation {
		out := map[string]Observation{}
		for name := range waves {
			out[name] = Observation{Revision: rev, Established: true, Instances: 1, Ready: 1, Listed: 1}
		}
		for _, name := range bad {
			out[name] = Observation{Revision: rev, Established: true, Instances: 1, Listed: 1}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		budget   intstr.IntOrString
		bad      []string
		complete bool
	}{
		{"one within a count of 1", intstr.FromInt32(1), []string{"c"}, true},
		{"one within 25% of 4", intstr.FromString("25%"), []string{"c"}, true},
		{"two past a count of 1", intstr.FromInt32(1), []string{"b", "c"}, false},
		{"one past 20% of 4 (rounds down to 0)", intstr.FromString("20%"), []string{"c"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{
				Graph: "g", ProgressDeadlineSeconds: 60,
				Waves: []fgv1alpha1.Wave{{Name: "all", Percent: 100, MaxFailures: &tc.budget}},
			}}
			step(t0, ro, 1, waves, obs(1))
			step(at(time.Second), ro, 2, waves, obs(2, tc.bad...))
			assert.Equal(t, fgv1alpha1.RolloutProgressing, ro.Status.Phase, "within the deadline")
			assert.Empty(t, ro.Status.Failed)
			evs := step(at(100*time.Second), ro, 2, waves, obs(2, tc.bad...))
			if !tc.complete {
				assert.Equal(t, fgv1alpha1.RolloutFailed, ro.Status.Phase)
				assert.Empty(t, ro.Status.Failed)
				return
			}
			assert.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase, ro.Status.Message)
			require.Len(t, ro.Status.Failed, 1)
			assert.Equal(t, fgv1alpha1.RolloutCluster{Name: "c", Revision: 1, Message: "0 of 1 instances Ready, 100% needed"}, ro.Status.Failed[0])
			assert.Empty(t, ro.Status.HoldingBack, "a failed cluster holds nothing back")
			require.NotEmpty(t, evs)
			assert.Equal(t, "ClusterFailed", evs[0].reason)
			assert.Contains(t, evs[0].note, `cluster "c" failed wave "all" (1 of 1 failures allowed) and goes back to revision 1`)

			p := &plan{spec: ro.Spec, target: 2, wave: ro.Status.Wave, failed: failedBack(ro.Status)}
			assert.ErrorIs(t, p.decideOn("c", 2, 0), ErrHeldBack, "the failed cluster does not take the target again")
			assert.NoError(t, p.decideOn("c", 1, 0), "it serves the stable revision")
			assert.NoError(t, p.decideOn("a", 2, 0))

			step(at(101*time.Second), ro, 3, waves, obs(2))
			assert.Empty(t, ro.Status.Failed, "a new revision starts with no failures")
		})
	}
}

// canaryRollout is a canary wave of the clusters in canary allowing
// budget failures, then a main wave of the rest, with onFailure.
func canaryRollout(budget int32, onFailure string) *fgv1alpha1.GraphRollout {
	b := intstr.FromInt32(budget)
	return &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{
		Graph: "g", ProgressDeadlineSeconds: 3, OnFailure: onFailure,
		Health: fgv1alpha1.HealthPolicy{SoakSeconds: 1},
		Waves:  []fgv1alpha1.Wave{{Name: "canary", Clusters: 1, MaxFailures: &b}, {Name: "main", Percent: 100}},
	}}
}

// waveObs observes every cluster of waves serving rev with one instance,
// Ready but on the named clusters.
func waveObs(waves map[string]int32, rev int64, bad ...string) map[string]Observation {
	out := map[string]Observation{}
	for name := range waves {
		out[name] = Observation{Revision: rev, Established: true, Serving: true, Instances: 1, Ready: 1, Listed: 1}
	}
	for _, name := range bad {
		out[name] = Observation{Revision: rev, Established: true, Serving: true, Instances: 1, Listed: 1}
	}
	return out
}

// A wave needs at least one healthy cluster: a canary of one cluster that
// fails fails its wave even with maxFailures 1, and nothing says the wave
// is healthy or serves the revision it does not serve. The budget as
// large as the wave is reported.
func TestAWaveWhoseEveryClusterFailedFailsWhateverItsBudget(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	waves := map[string]int32{"spoke-1": 0, "spoke-2": 1, "spoke-3": 1}
	for _, tc := range []struct {
		onFailure string
		phase     string
	}{
		{fgv1alpha1.OnFailurePause, fgv1alpha1.RolloutFailed},
		{fgv1alpha1.OnFailureRollback, fgv1alpha1.RolloutRolledBack},
	} {
		t.Run(tc.onFailure, func(t *testing.T) {
			ro := canaryRollout(1, tc.onFailure)
			step(t0, ro, 1, waves, waveObs(waves, 1))
			budgetEvs := checkBudgets(&ro.Status, ro.Spec, waves)
			require.Len(t, budgetEvs, 1)
			assert.Equal(t, "FailureBudgetCoversWave", budgetEvs[0].reason)
			assert.Contains(t, budgetEvs[0].note, `wave "canary" allows 1 of its 1 cluster to fail`)
			cond := meta.FindStatusCondition(ro.Status.Conditions, ConditionFailureBudget)
			require.NotNil(t, cond)
			assert.Equal(t, metav1.ConditionFalse, cond.Status)
			assert.Empty(t, checkBudgets(&ro.Status, ro.Spec, waves), "reported once")

			var evs []event
			for s := time.Duration(1); s <= 10; s++ {
				evs = append(evs, step(at(s*time.Second), ro, 2, waves, waveObs(waves, 2, "spoke-1"))...)
			}
			assert.Equal(t, tc.phase, ro.Status.Phase, ro.Status.Message)
			assert.Empty(t, ro.Status.Failed, "not failed within a budget: the wave failed")
			assert.Contains(t, ro.Status.Message, "spoke-1")
			assert.NotContains(t, ro.Status.Message, "healthy,")
			assert.Contains(t, reasons(evs), "WaveFailed")
			assert.NotContains(t, reasons(evs), "WaveComplete")
			for _, e := range evs {
				assert.NotContains(t, e.note, `wave "canary" serves revision 2`, "%s: %s", e.reason, e.note)
			}
		})
	}
}

// A cluster that fails within its wave's budget, beside a healthy one, is
// named wherever the wave is said to be healthy or complete.
func TestAFailedClusterIsNamedWhereItsWaveIsCalledHealthy(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	waves := map[string]int32{"spoke-1": 0, "spoke-2": 0, "spoke-3": 1}
	ro := canaryRollout(1, "")
	ro.Spec.Waves[0].Clusters = 2
	ro.Spec.Health.SoakSeconds = 30
	step(t0, ro, 1, waves, waveObs(waves, 1))
	assert.Empty(t, checkBudgets(&ro.Status, ro.Spec, waves), "1 of 2 leaves a healthy cluster")

	var evs []event
	for s := time.Duration(1); s <= 5; s++ {
		evs = append(evs, step(at(s*time.Second), ro, 2, waves, waveObs(waves, 2, "spoke-2"))...)
	}
	require.Len(t, ro.Status.Failed, 1)
	assert.Equal(t, `wave "canary" healthy on 1 of its 2 clusters; failed within its budget: spoke-2 (serves revision 1: 0 of 1 instances Ready, 100% needed), soaking for 30s`, ro.Status.Message)
	evs = append(evs, step(at(40*time.Second), ro, 2, waves, waveObs(waves, 2, "spoke-2"))...)
	var done []string
	for _, e := range evs {
		if e.reason == "WaveComplete" {
			done = append(done, e.note)
		}
	}
	assert.Equal(t, []string{`wave "canary" serves revision 2 on 1 of its 2 clusters; failed within its budget: spoke-2 (serves revision 1: 0 of 1 instances Ready, 100% needed)`}, done)
}

// However large a wave's maxFailures, a rollout records at most
// MaxFailedClusters failed clusters: the last failure within the bound is
// recorded and the rollout goes on; one more fails the rollout, saying
// why, rather than writing a status etcd would refuse.
func TestARolloutRecordsAtMostMaxFailedClusters(t *testing.T) {
	const n = fgv1alpha1.MaxFailedClusters + 500
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	waves := map[string]int32{}
	for i := range n {
		waves[fmt.Sprintf("c-%05d", i)] = 0
	}
	for _, bad := range []int{fgv1alpha1.MaxFailedClusters, fgv1alpha1.MaxFailedClusters + 1} {
		t.Run(fmt.Sprint(bad, " failing"), func(t *testing.T) {
			var failing []string
			for _, name := range sortedKeys(waves) {
				if len(failing) < bad {
					failing = append(failing, name)
				}
			}
			budget := intstr.FromString("90%")
			ro := &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{
				Graph: "g", ProgressDeadlineSeconds: 60,
				Waves: []fgv1alpha1.Wave{{Name: "all", Percent: 100, MaxFailures: &budget}},
			}}
			step(t0, ro, 1, waves, waveObs(waves, 1))
			step(at(time.Second), ro, 2, waves, waveObs(waves, 2, failing...))
			step(at(100*time.Second), ro, 2, waves, waveObs(waves, 2, failing...))
			if bad <= fgv1alpha1.MaxFailedClusters {
				assert.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase, ro.Status.Message)
				assert.Len(t, ro.Status.Failed, bad)
				return
			}
			assert.Equal(t, fgv1alpha1.RolloutFailed, ro.Status.Phase)
			assert.Empty(t, ro.Status.Failed)
			assert.Contains(t, ro.Status.Message, fmt.Sprintf("%d more clusters failed, past the %d failures a rollout records", bad, fgv1alpha1.MaxFailedClusters))
		})
	}
}
