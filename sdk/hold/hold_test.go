package hold_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/hold"
)

// Holding adds one hold for the clusters no hold names yet, and nothing
// when every one is named; the holds given are never written to.
func TestHoldClusters(t *testing.T) {
	held := []fgv1alpha1.Hold{{Clusters: []string{"a"}, Reason: "first"}}
	ro := rollout("web", held, "a", "b")
	got, changed, err := hold.Clusters(ro, []string{"a", "b", "b"}, "second")
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, []fgv1alpha1.Hold{{Clusters: []string{"a"}, Reason: "first"}, {Clusters: []string{"b"}, Reason: "second"}}, got)
	ro.Spec.Holds = got
	_, changed, err = hold.Clusters(ro, []string{"b", "a"}, "again")
	require.NoError(t, err)
	assert.False(t, changed, "every cluster is named already")
	assert.Len(t, held, 1)

	ro.Spec.Holds = held
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "true"}}
	got, changed = hold.Selector(ro, sel, "frozen")
	assert.True(t, changed)
	assert.Equal(t, sel, got[1].ClusterSelector)
	ro.Spec.Holds = got
	_, changed = hold.Selector(ro, &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "true"}}, "again")
	assert.False(t, changed, "an equal selector holds already")
}

// rollout is a GraphRollout with the holds given whose status lists the
// clusters given as placed.
func rollout(name string, holds []fgv1alpha1.Hold, placed ...string) *fgv1alpha1.GraphRollout {
	ro := &fgv1alpha1.GraphRollout{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: fgv1alpha1.GraphRolloutSpec{Holds: holds}}
	for _, c := range placed {
		ro.Status.Clusters = append(ro.Status.Clusters, fgv1alpha1.RolloutCluster{Name: c})
	}
	return ro
}

// Releasing by name takes the clusters out of every hold naming them, and
// refuses the whole release, naming each cluster, when one is held only
// by a selector or not at all.
func TestReleaseClusters(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "true"}}
	ro := rollout("web", []fgv1alpha1.Hold{
		{Clusters: []string{"a", "b"}, Reason: "one"}, {Clusters: []string{"a"}, Reason: "two"}, {ClusterSelector: sel},
	}, "a", "b", "c", "frozen")
	bySelector := func(name string) bool { return name == "frozen" }

	got, err := hold.Release(ro, []string{"a"}, bySelector)
	require.NoError(t, err)
	assert.Equal(t, []fgv1alpha1.Hold{{Clusters: []string{"b"}, Reason: "one"}, {ClusterSelector: sel}}, got)
	assert.Equal(t, []string{"a", "b"}, ro.Spec.Holds[0].Clusters, "the rollout read is not written to")

	_, err = hold.Release(ro, []string{"a", "frozen", "c"}, bySelector)
	require.ErrorIs(t, err, hold.ErrHeldBySelector)
	require.ErrorIs(t, err, hold.ErrNotHeld)
	assert.Contains(t, err.Error(), `cluster "frozen" in GraphRollout web: a hold takes the cluster by label selector`)
	assert.Contains(t, err.Error(), `cluster "c" in GraphRollout web: no hold of the rollout takes the cluster`)

	got, err = hold.ReleaseSelector(ro, &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "true"}})
	require.NoError(t, err)
	assert.Len(t, got, 2)
	_, err = hold.ReleaseSelector(ro, &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "false"}})
	require.ErrorIs(t, err, hold.ErrNotHeld)
	assert.Contains(t, err.Error(), `selector "freeze=false" in GraphRollout web`)
}

// A hold of a cluster the rollout does not place is refused, naming every
// such cluster and the clusters it does place; a release of one no hold
// names too, while one a hold names is released even after it left.
func TestUnknownClustersAreRefused(t *testing.T) {
	ro := rollout("web", []fgv1alpha1.Hold{{Clusters: []string{"gone"}}}, "a", "b")
	_, _, err := hold.Clusters(ro, []string{"a", "x", "y", "x"}, "freeze")
	require.ErrorIs(t, err, hold.ErrUnknownCluster)
	assert.Equal(t, `clusters "x", "y" in GraphRollout web: the rollout places no such cluster (it places a, b)`, err.Error())

	_, err = hold.Release(ro, []string{"x"}, func(string) bool { return false })
	require.ErrorIs(t, err, hold.ErrUnknownCluster)
	assert.Equal(t, `cluster "x" in GraphRollout web: the rollout places no such cluster (it places a, b)`, err.Error())
	got, err := hold.Release(ro, []string{"gone"}, func(string) bool { return false })
	require.NoError(t, err, "a cluster that left can still be released")
	assert.Empty(t, got)

	empty := rollout("new", nil)
	_, _, err = hold.Clusters(empty, []string{"a"}, "")
	assert.EqualError(t, err, `cluster "a" in GraphRollout new: the rollout places no such cluster (its status lists no cluster yet)`)

	var many []string
	for i := range 12 {
		many = append(many, fmt.Sprintf("c%02d", i))
	}
	big := rollout("big", nil, many...)
	_, _, err = hold.Clusters(big, []string{"z"}, "")
	assert.ErrorContains(t, err, "(it places c00, c01, c02, c03, c04, c05, c06, c07, c08, c09 and 2 more)")
}
