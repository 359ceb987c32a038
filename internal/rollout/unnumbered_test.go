package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// An unnumbered revision (the hub could not record it) under a rollout
// reaches no cluster the rollout has not opened to a new revision, and
// where it has, only a cluster serving no numbered revision
// (ErrUnnumbered): a canary that failed the target, the clusters of waves
// not reached, held clusters and clusters being rolled back keep what
// they serve. Without a rollout it is only placed, as before.
func TestAnUnnumberedRevisionDoesNotBypassTheRollout(t *testing.T) {
	clusters := []Cluster{
		{Name: "a", Labels: map[string]string{"ring": "canary"}},
		{Name: "b", Labels: map[string]string{"ring": "canary"}},
		{Name: "c", Labels: map[string]string{"ring": "main"}},
		{Name: "d", Labels: map[string]string{"ring": "main"}},
	}
	p := NewPlanner(nil, func() []Cluster { return clusters })
	p.AwaitRollouts()
	assert.ErrorIs(t, p.Decide("g", "a", 0), ErrNotLoaded, "rollouts not loaded yet: nothing goes")

	spec := fgv1alpha1.GraphRolloutSpec{Graph: "g", Waves: []fgv1alpha1.Wave{
		{Name: "canary", Clusters: 2, MaxFailures: ptrTo(intstr.FromInt32(1))},
		{Name: "main", Percent: 100},
	}}
	// Revision 2 is in the canary wave; b failed it and went back to 1.
	pl := &plan{spec: spec, target: 2, wave: 0, failed: map[string]int64{"b": 1}}
	p.set(map[string]*plan{"g": pl})

	for _, name := range []string{"a", "b"} {
		err := p.Decide("g", name, 0)
		assert.ErrorIs(t, err, ErrUnnumbered, "cluster %s: the first wave takes new revisions, but only where none serves", name)
		assert.NotErrorIs(t, err, ErrHeldBack)
	}
	for _, name := range []string{"c", "d"} {
		assert.ErrorIs(t, p.Decide("g", name, 0), ErrHeldBack, "cluster %s: its wave is not reached", name)
	}
	decided, placed := p.DecideEngaged("g", 0)
	assert.Len(t, placed, 4)
	assert.Contains(t, decided["c"], "unnumbered revision waits for its number")
	assert.NotEmpty(t, decided["a"], "no cluster is told to serve it unconditionally")

	// A first wave that needs approval, or moves a few at a time, takes
	// no new revision at once: nor an unnumbered one.
	gated := spec
	gated.Waves = []fgv1alpha1.Wave{{Name: "canary", Clusters: 2, Approval: fgv1alpha1.ApprovalRequired}, {Name: "main", Percent: 100}}
	p.set(map[string]*plan{"g": {spec: gated, target: 2, wave: 2}})
	assert.ErrorIs(t, p.Decide("g", "a", 0), ErrHeldBack)
	limitedSpec := spec
	limitedSpec.Waves = []fgv1alpha1.Wave{{Name: "canary", Clusters: 2, MaxConcurrency: ptrTo(intstr.FromInt32(1))}, {Name: "main", Percent: 100}}
	p.set(map[string]*plan{"g": {spec: limitedSpec, target: 2, wave: 2}})
	assert.ErrorIs(t, p.Decide("g", "a", 0), ErrHeldBack)

	// Holds, rollbacks (manual or automatic) and a refused rollout hold it
	// back everywhere.
	p.set(map[string]*plan{"g": {spec: spec, target: 2, wave: 2, held: map[string]int64{"a": 1}}})
	assert.ErrorIs(t, p.Decide("g", "a", 0), ErrHeldBack)
	assert.ErrorIs(t, p.Decide("g", "b", 0), ErrUnnumbered)
	back := spec
	back.RollbackTo = 1
	p.set(map[string]*plan{"g": {spec: back, target: 1, wave: 2}})
	assert.ErrorIs(t, p.Decide("g", "a", 0), ErrHeldBack)
	p.set(map[string]*plan{"g": {spec: spec, target: 2, wave: 1, back: 1, backFrom: 0}})
	assert.ErrorIs(t, p.Decide("g", "a", 0), ErrHeldBack)
	p.set(map[string]*plan{"g": {spec: spec, target: 2, wave: 0, refusedAbove: 2}})
	assert.ErrorIs(t, p.Decide("g", "a", 0), ErrHeldBack)

	// A rollout without a target yet lets new revisions go everywhere
	// placed: an unnumbered one only where none serves.
	p.set(map[string]*plan{"g": {spec: spec}})
	assert.ErrorIs(t, p.Decide("g", "d", 0), ErrUnnumbered)

	// Numbered revisions are decided as before.
	p.set(map[string]*plan{"g": pl})
	require.NoError(t, p.Decide("g", "a", 2))
	assert.ErrorIs(t, p.Decide("g", "b", 2), ErrHeldBack)
	assert.NoError(t, p.Decide("g", "b", 3))

	// No rollout for the graph: unnumbered is only placed.
	p.set(nil)
	for _, c := range clusters {
		assert.NoError(t, p.Decide("g", c.Name, 0))
	}
}
