package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

func fleetOf(n int) ([]string, map[string]map[string]string) {
	var names []string
	labels := map[string]map[string]string{}
	for i := range n {
		name := string(rune('a' + i))
		names = append(names, name)
		labels[name] = map[string]string{"ring": "main"}
	}
	return names, labels
}

// Waves take clusters by selector, count or share, in order; clusters no
// wave takes join the last.
func TestWavesSplitThePlacedClusters(t *testing.T) {
	names, labels := fleetOf(10)
	labels["j"] = map[string]string{"ring": "canary"}
	spec := fgv1alpha1.GraphRolloutSpec{Waves: []fgv1alpha1.Wave{
		{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}},
		{Clusters: 2},
		{Percent: 30},
		{Clusters: 1},
	}}
	got := assign(spec, names, labels)
	want := map[string]int32{"j": 0, "a": 1, "b": 1, "c": 2, "d": 2, "e": 2, "f": 3, "g": 3, "h": 3, "i": 3}
	assert.Equal(t, want, got)

	one := assign(fgv1alpha1.GraphRolloutSpec{}, names, labels)
	for _, w := range one {
		assert.Equal(t, int32(0), w, "no waves: one wave of all")
	}
}

// A new revision reaches the first wave at once, later waves only when the
// rollout opens them; a rollback holds every other revision back.
func TestDecideFollowsTheWaves(t *testing.T) {
	var nilPlan *plan
	require.NoError(t, nilPlan.decide(7, 3), "no rollout: everything serves")
	p := &plan{target: 2, wave: 0, spec: fgv1alpha1.GraphRolloutSpec{Waves: []fgv1alpha1.Wave{{Clusters: 1}, {Clusters: 1}}}}
	assert.NoError(t, p.decide(2, 0))
	assert.ErrorIs(t, p.decide(2, 1), ErrHeldBack)
	assert.NoError(t, p.decide(3, 0), "a newer revision goes to the first wave")
	assert.ErrorIs(t, p.decide(3, 1), ErrHeldBack)
	p.wave = 1
	assert.NoError(t, p.decide(2, 1))
	p.spec.RollbackTo = 1
	assert.NoError(t, p.decide(1, 1))
	assert.ErrorIs(t, p.decide(2, 0), ErrHeldBack)
}

func TestPlannerPlacesByHookAndSelector(t *testing.T) {
	clusters := []Cluster{{Name: "a", Labels: map[string]string{"env": "prod"}}, {Name: "b"}, {Name: "c", Labels: map[string]string{"env": "prod"}}}
	hook := func(_, cluster string, _ map[string]string) bool { return cluster != "c" }
	p := NewPlanner(hook, func() []Cluster { return clusters })
	assert.NoError(t, p.Decide("g", "a", 1))
	assert.NoError(t, p.Decide("g", "b", 1))
	assert.ErrorIs(t, p.Decide("g", "c", 1), ErrNotPlaced)

	p.AwaitRollouts()
	assert.ErrorIs(t, p.Decide("g", "a", 1), ErrNotLoaded)
	p.set(map[string]*plan{"g": {spec: fgv1alpha1.GraphRolloutSpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
	}}})
	require.NoError(t, p.Ready(t.Context()))
	assert.NoError(t, p.Decide("g", "a", 1))
	assert.ErrorIs(t, p.Decide("g", "b", 1), ErrNotPlaced)
	placed, err := p.Placed("g", "c")
	require.NoError(t, err)
	assert.False(t, placed, "the hook and the selector must both place")
}

// A wave opens the next once healthy for the soak time, fails past its
// deadline, and resumes when asked.
func TestStepMovesWavesOn(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	ro := &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{
		Graph:                   "g",
		Waves:                   []fgv1alpha1.Wave{{Name: "one", Clusters: 1}, {Name: "two", Clusters: 1}},
		Health:                  fgv1alpha1.HealthPolicy{SoakSeconds: 10},
		ProgressDeadlineSeconds: 60,
	}}
	waves := map[string]int32{"a": 0, "b": 1}
	healthy := func(rev int64) map[string]Observation {
		return map[string]Observation{
			"a": {Revision: rev, Established: true, Instances: 1, Ready: 1, Listed: 1},
			"b": {Revision: 1, Established: true},
		}
	}
	step(t0, ro, 1, waves, healthy(1))
	require.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase, "first sight adopts what serves")

	evs := step(at(time.Second), ro, 2, waves, healthy(1))
	assert.Equal(t, fgv1alpha1.RolloutProgressing, ro.Status.Phase)
	assert.Equal(t, "RolloutStarted", evs[0].reason)
	require.Len(t, ro.Status.HoldingBack, 1)
	assert.Equal(t, "serves revision 1", ro.Status.HoldingBack[0].Message)

	step(at(2*time.Second), ro, 2, waves, healthy(2))
	assert.Equal(t, int32(0), ro.Status.Wave, "healthy, soaking")
	step(at(13*time.Second), ro, 2, waves, healthy(2))
	assert.Equal(t, int32(1), ro.Status.Wave, "soaked: wave two opens")
	assert.Equal(t, "two", ro.Status.WaveName)

	evs = step(at(100*time.Second), ro, 2, waves, healthy(2))
	assert.Equal(t, fgv1alpha1.RolloutFailed, ro.Status.Phase)
	assert.Contains(t, ro.Status.Message, "b: serves revision 1")
	assert.Equal(t, "WaveFailed", evs[0].reason)
	step(at(101*time.Second), ro, 2, waves, healthy(2))
	assert.Equal(t, fgv1alpha1.RolloutFailed, ro.Status.Phase, "failed stays failed")

	ro.Annotations = map[string]string{fgv1alpha1.AnnotationResume: "1"}
	all := healthy(2)
	all["b"] = Observation{Revision: 2, Established: true}
	step(at(102*time.Second), ro, 2, waves, all)
	assert.Equal(t, fgv1alpha1.RolloutProgressing, ro.Status.Phase)
	step(at(113*time.Second), ro, 2, waves, all)
	assert.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase)
	assert.Equal(t, int64(2), ro.Status.StableRevision)
}

// Instances the runtime has not reconciled yet keep a cluster unhealthy.
func TestUnreconciledInstancesAreNotHealthy(t *testing.T) {
	bad := unhealthy(fgv1alpha1.GraphRolloutSpec{}, 2, 0, map[string]int32{"a": 0},
		map[string]Observation{"a": {Revision: 2, Established: true, Instances: 0, Listed: 3}})
	require.Len(t, bad, 1)
	assert.Equal(t, "0 of 3 instances reconciled", bad[0].Message)
}

// decideAll agrees with Decide on every cluster, and lists each one.
func TestDecideAllAgreesWithDecide(t *testing.T) {
	clusters := []Cluster{{Name: "a", Labels: map[string]string{"env": "prod"}}, {Name: "b"}, {Name: "c", Labels: map[string]string{"env": "prod"}}}
	p := NewPlanner(nil, func() []Cluster { return clusters })
	p.set(map[string]*plan{"g": {target: 1, spec: fgv1alpha1.GraphRolloutSpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
		Waves:           []fgv1alpha1.Wave{{Clusters: 1}, {Clusters: 1}},
	}}})
	for _, g := range []string{"g", "other"} {
		decided, placed := p.decideAll(g, 2, clusters)
		require.Len(t, decided, len(clusters))
		for _, c := range clusters {
			want := ""
			if err := p.Decide(g, c.Name, 2); err != nil {
				want = err.Error()
			}
			assert.Equal(t, want, decided[c.Name], "%s on %s", g, c.Name)
			ok, _ := p.Placed(g, c.Name)
			assert.Equal(t, ok, placed[c.Name], "%s on %s", g, c.Name)
		}
	}
}
