package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// A held cluster takes its pin and nothing else: not the target once its
// wave has started, not a rollback; the other clusters are not affected.
func TestAHoldPinsAClusterWhateverTheRolloutSays(t *testing.T) {
	p := &plan{spec: fgv1alpha1.GraphRolloutSpec{Graph: "g"}, target: 2, wave: 1, held: map[string]int64{"c": 1}}
	assert.ErrorIs(t, p.decideOn("c", 2, 0), ErrHeldBack)
	assert.ErrorIs(t, p.decideOn("c", 3, 0), ErrHeldBack, "a revision the controller has not seen yet")
	assert.NoError(t, p.decideOn("c", 1, 0))
	assert.NoError(t, p.decideOn("a", 2, 0))
	p.spec.RollbackTo = 3
	assert.ErrorIs(t, p.decideOn("c", 3, 0), ErrHeldBack, "a hold wins over a rollback")
	assert.NoError(t, p.decideOn("a", 3, 1))
	assert.ErrorIs(t, p.decideOn("c", 0, 0), ErrHeldBack, "an unnumbered revision does not pass a hold either")
	assert.NoError(t, (*plan)(nil).decideOn("c", 0, 0), "unnumbered graphs without a rollout are only placed")
}

// A hold takes clusters by name or by labels; the pin is what the cluster
// serves when the hold first takes it, and stays so (even if the cluster
// moved meanwhile); a cluster serving nothing is pinned at the stable
// revision.
func TestAPinIsTheRevisionServedWhenTheHoldTookIt(t *testing.T) {
	spec := fgv1alpha1.GraphRolloutSpec{Holds: []fgv1alpha1.Hold{
		{Clusters: []string{"a", "x"}, Reason: "by name"},
		{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "true"}}, Reason: "by label"},
	}}
	labels := map[string]map[string]string{"b": {"freeze": "true"}, "c": {"freeze": "false"}, "d": {"freeze": "true"}}
	held := heldBy(spec, []string{"a", "b", "c", "d"}, labels)
	assert.Equal(t, map[string]string{"a": "by name", "b": "by label", "d": "by label"}, held)

	st := &fgv1alpha1.GraphRolloutStatus{StableRevision: 1, Clusters: []fgv1alpha1.RolloutCluster{
		{Name: "a", Revision: 1, Desired: 1, Held: true},
		{Name: "b", Revision: 1, Desired: 2},
	}}
	obs := map[string]Observation{"a": {Revision: 2}, "b": {Revision: 1}}
	assert.Equal(t, map[string]int64{"a": 1, "b": 1, "d": 1}, pinRevisions(st, held, obs))
	assert.Equal(t, map[string]int32{"c": 0}, withoutHeld(map[string]int32{"a": 0, "b": 0, "c": 0, "d": 1}, held))
}

// The rollout moves without its held clusters: an unhealthy held cluster
// neither holds its wave nor fails it, and status.clusters still lists it,
// held at its pin, beside the desired and served revision of the others.
func TestARolloutGoesOnWithoutItsHeldClusters(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro := &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{
		Graph: "g", ProgressDeadlineSeconds: 60,
		Waves: []fgv1alpha1.Wave{{Name: "one", Clusters: 1}, {Name: "rest", Percent: 100}},
		Holds: []fgv1alpha1.Hold{{Clusters: []string{"c"}, Reason: "freeze"}},
	}}
	waves := map[string]int32{"a": 0, "b": 1, "c": 1}
	healthy := func(rev int64) Observation {
		return Observation{Revision: rev, Established: true, Instances: 1, Ready: 1, Listed: 1}
	}
	obs := map[string]Observation{"a": healthy(1), "b": healthy(1), "c": healthy(1)}
	step(t0, ro, 1, waves, obs)
	held := heldBy(ro.Spec, []string{"a", "b", "c"}, nil)
	pinned := pinRevisions(&ro.Status, held, obs)
	moving := withoutHeld(waves, held)

	obs = map[string]Observation{"a": healthy(2), "b": healthy(1), "c": {Revision: 1, Established: true, Instances: 1, Listed: 1}}
	step(t0, ro, 2, moving, obs)
	step(metav1.NewTime(t0.Add(time.Second)), ro, 2, moving, obs)
	describeClusters(&ro.Status, ro.Spec, clusterFacts{waves: waves, obs: obs, held: held, pinned: pinned})
	assert.Equal(t, "rest", ro.Status.WaveName)
	assert.Equal(t, []fgv1alpha1.RolloutCluster{
		{Name: "a", Wave: 0, Revision: 2, Desired: 2},
		{Name: "b", Wave: 1, Revision: 1, Desired: 2, Message: "serves revision 1"},
		{Name: "c", Wave: 1, Revision: 1, Desired: 1, Held: true, HoldReason: "freeze"},
	}, ro.Status.Clusters)

	obs["b"] = healthy(2)
	step(metav1.NewTime(t0.Add(2*time.Second)), ro, 2, moving, obs)
	assert.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase, ro.Status.Message)
	assert.Empty(t, ro.Status.HoldingBack, "the held cluster on revision 1 holds nothing back")
	describeClusters(&ro.Status, ro.Spec, clusterFacts{waves: waves, obs: obs, held: held, pinned: pinned})
	evs := holdEvents(nil, held, pinned)
	assert.Equal(t, []event{{"Normal", "ClusterHeld", `cluster "c" is held at revision 1: freeze`}}, evs)
	assert.Equal(t, []event{{"Normal", "ClusterReleased", `cluster "c", held at revision 1, is released to the rollout`}},
		holdEvents(ro.Status.Clusters[2:], nil, nil))
}

// A cluster that failed its wave shows the revision it failed, why, and
// the one it went back to as desired.
func TestAFailedClusterShowsWhatItFailed(t *testing.T) {
	st := &fgv1alpha1.GraphRolloutStatus{TargetRevision: 2, StableRevision: 1, Wave: 1,
		Failed: []fgv1alpha1.RolloutCluster{{Name: "b", Wave: 0, Revision: 1, Message: "0 of 1 instances Ready, 100% needed"}}}
	spec := fgv1alpha1.GraphRolloutSpec{Waves: []fgv1alpha1.Wave{{Clusters: 2}, {Percent: 100}}}
	describeClusters(st, spec, clusterFacts{waves: map[string]int32{"a": 0, "b": 0, "c": 1}, obs: map[string]Observation{"a": {Revision: 2}, "b": {Revision: 1}}})
	assert.Equal(t, []fgv1alpha1.RolloutCluster{
		{Name: "a", Wave: 0, Revision: 2, Desired: 2},
		{Name: "b", Wave: 0, Revision: 1, Desired: 1, FailedRevision: 2, Message: "0 of 1 instances Ready, 100% needed"},
		{Name: "c", Wave: 1, Revision: 0, Desired: 2},
	}, st.Clusters)
}
