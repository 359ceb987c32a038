package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// Holding adds one hold for the clusters no hold names yet, and nothing
// when every one is named; the holds given are never written to.
func TestHoldClusters(t *testing.T) {
	held := []fgv1alpha1.Hold{{Clusters: []string{"a"}, Reason: "first"}}
	got, changed := HoldClusters(held, []string{"a", "b", "b"}, "second")
	assert.True(t, changed)
	assert.Equal(t, []fgv1alpha1.Hold{{Clusters: []string{"a"}, Reason: "first"}, {Clusters: []string{"b"}, Reason: "second"}}, got)
	_, changed = HoldClusters(got, []string{"b", "a"}, "again")
	assert.False(t, changed, "every cluster is named already")
	assert.Len(t, held, 1)

	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "true"}}
	got, changed = HoldSelector(held, sel, "frozen")
	assert.True(t, changed)
	assert.Equal(t, sel, got[1].ClusterSelector)
	_, changed = HoldSelector(got, &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "true"}}, "again")
	assert.False(t, changed, "an equal selector holds already")
}

// Releasing by name takes the clusters out of every hold naming them, and
// refuses the whole release, naming each cluster, when one is held only
// by a selector or not at all.
func TestReleaseClusters(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "true"}}
	ro := &fgv1alpha1.GraphRollout{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: fgv1alpha1.GraphRolloutSpec{Holds: []fgv1alpha1.Hold{
		{Clusters: []string{"a", "b"}, Reason: "one"}, {Clusters: []string{"a"}, Reason: "two"}, {ClusterSelector: sel},
	}}}
	bySelector := func(name string) bool { return name == "frozen" }

	got, err := ReleaseClusters(ro, []string{"a"}, bySelector)
	require.NoError(t, err)
	assert.Equal(t, []fgv1alpha1.Hold{{Clusters: []string{"b"}, Reason: "one"}, {ClusterSelector: sel}}, got)
	assert.Equal(t, []string{"a", "b"}, ro.Spec.Holds[0].Clusters, "the rollout read is not written to")

	_, err = ReleaseClusters(ro, []string{"a", "frozen", "c"}, bySelector)
	require.ErrorIs(t, err, ErrHeldBySelector)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.Contains(t, err.Error(), `cluster "frozen" in GraphRollout web: a hold takes the cluster by label selector`)
	assert.Contains(t, err.Error(), `cluster "c" in GraphRollout web: no hold of the rollout takes the cluster`)

	got, err = ReleaseSelector(ro, &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "true"}})
	require.NoError(t, err)
	assert.Len(t, got, 2)
	_, err = ReleaseSelector(ro, &metav1.LabelSelector{MatchLabels: map[string]string{"freeze": "false"}})
	require.ErrorIs(t, err, ErrNotHeld)
	assert.Contains(t, err.Error(), `selector "freeze=false" in GraphRollout web`)
}
