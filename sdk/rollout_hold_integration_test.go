//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A held spoke keeps serving revision 1 while the two others move to
// revision 2 in their waves, and the rollout completes without it; the
// status shows, per cluster, the revision served and the one desired,
// and kubectl's HELD column names it; a hub that replaces the first one
// keeps the pin. Released, it catches up with its wave at once.
func TestAHeldClusterKeepsItsRevisionUntilReleased(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 3) // its own: the rollout controller reads every GraphRollout on its hub cluster
	provider := newLabelledProvider(t, fleet, map[string]map[string]string{
		"spoke-1": {"ring": "canary"}, "spoke-2": {"ring": "main"}, "spoke-3": {"ring": "main"},
	})
	spokes := clientsOf(t, fleet)
	opts := sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}}
	h, stop := startStoppableHub(t, fleet.Hub.Config, provider, opts)
	gvk := webAppGVK.GroupVersion().WithKind("Moor")
	applyRollout(t, fleet.Hub.Config, "moor", twoWaves("moor", nil))
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "moor", "Moor", "1", "")))
	for _, c := range spokes {
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"color": "green"}))
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	requireRollout(t, h, "moor", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 1, "spoke-2": 1, "spoke-3": 1})

	require.NoError(t, h.Hold(context.Background(), "moor", "spoke-3", "customer freeze"))
	require.NoError(t, h.Hold(context.Background(), "moor", "spoke-3", "twice is once"))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c := rolloutCluster(ct, h, "moor", "spoke-3")
		assert.True(ct, c.Held)
		assert.Equal(ct, int64(1), c.Desired, "pinned at what it serves")
	}, wait, tick)

	rev2 := tideRGD(t, "moor", "Moor", "2", "")
	require.NoError(t, h.RegisterGraph(context.Background(), rev2))
	requireRollout(t, h, "moor", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 2, "spoke-2": 2, "spoke-3": 1})
	requireVersion(t, spokes["spoke-1"], "app", "2")
	requireVersion(t, spokes["spoke-2"], "app", "2")
	requireVersion(t, spokes["spoke-3"], "app", "1")
	requireState(t, spokes["spoke-3"], gvk, "app", "ACTIVE")
	st := rolloutStatus(t, newClient(t, fleet.Hub.Config), "moor")
	assert.Equal(t, []fgv1alpha1.RolloutCluster{
		{Name: "spoke-1", Wave: 0, Revision: 2, Desired: 2},
		{Name: "spoke-2", Wave: 1, Revision: 2, Desired: 2},
		{Name: "spoke-3", Wave: 1, Revision: 1, Desired: 1, Held: true, HoldReason: "customer freeze"},
	}, st.Clusters)
	assert.Empty(t, st.HoldingBack)
	assert.Equal(t, []string{"spoke-3"}, printedColumn(t, fleet.Hub, "moor", "HELD"))
	requireEventWith(t, fleet, "moor", "ClusterHeld", `cluster "spoke-3" is held at revision 1: customer freeze`)

	// The pin lives in the status: a hub that replaces this one keeps it,
	// and never writes revision 2's child there meanwhile.
	pinnedChild := &corev1.ConfigMap{}
	require.NoError(t, spokes["spoke-3"].Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "app-tide"}, pinnedChild))
	stop()
	h, _ = startStoppableHub(t, fleet.Hub.Config, newLabelledProvider(t, fleet, provider.labels), opts)
	require.NoError(t, h.RegisterGraph(context.Background(), rev2))
	requireRollout(t, h, "moor", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 2, "spoke-2": 2, "spoke-3": 1})
	requireVersion(t, spokes["spoke-3"], "app", "1")
	assert.True(t, rolloutCluster(t, h, "moor", "spoke-3").Held)
	after := &corev1.ConfigMap{}
	require.NoError(t, spokes["spoke-3"].Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "app-tide"}, after))
	assert.Equal(t, pinnedChild.ResourceVersion, after.ResourceVersion, "the pinned child was not rewritten")

	assert.ErrorIs(t, h.Release(context.Background(), "moor", "spoke-1"), sdk.ErrNotHeld)
	assert.ErrorIs(t, h.Release(context.Background(), "no-such-rollout", "spoke-3"), sdk.ErrNoRollout)
	assert.ErrorIs(t, h.Hold(context.Background(), "no-such-rollout", "spoke-3", ""), sdk.ErrNoRollout)
	assert.ErrorIs(t, h.Hold(context.Background(), "moor", "spoke-9", ""), sdk.ErrUnknownCluster, "the rollout places no spoke-9")
	require.NoError(t, h.Release(context.Background(), "moor", "spoke-3"))
	requireRollout(t, h, "moor", fgv1alpha1.RolloutComplete, allServeOf(3, 2))
	requireVersion(t, spokes["spoke-3"], "app", "2")
	requireState(t, spokes["spoke-3"], gvk, "app", "ACTIVE")
	c := rolloutCluster(t, h, "moor", "spoke-3")
	assert.False(t, c.Held)
	assert.Equal(t, int64(2), c.Desired)
	requireEventWith(t, fleet, "moor", "ClusterReleased", `cluster "spoke-3", held at revision 1, is released to the rollout`)
}

// A hold by label selector, from kubectl, pins every cluster it selects;
// releasing one of them by name is refused, since only the selector can
// let it go.
func TestAHoldBySelectorIsReleasedByEditingIt(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 3) // its own: the rollout controller reads every GraphRollout on its hub cluster
	provider := newLabelledProvider(t, fleet, map[string]map[string]string{
		"spoke-1": {"ring": "canary"}, "spoke-2": {"ring": "main"}, "spoke-3": {"ring": "main", "freeze": "true"},
	})
	spokes := clientsOf(t, fleet)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}})
	frozen := map[string]any{"holds": []any{map[string]any{
		"clusterSelector": map[string]any{"matchLabels": map[string]any{"freeze": "true"}}, "reason": "frozen by label",
	}}}
	applyRollout(t, fleet.Hub.Config, "dock", twoWaves("dock", frozen))
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "dock", "Dock", "1", "")))
	gvk := webAppGVK.GroupVersion().WithKind("Dock")
	for _, c := range spokes {
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"color": "green"}))
	}
	requireRollout(t, h, "dock", fgv1alpha1.RolloutComplete, allServeOf(3, 1))

	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "dock", "Dock", "2", "")))
	requireRollout(t, h, "dock", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 2, "spoke-2": 2, "spoke-3": 1})
	requireVersion(t, spokes["spoke-3"], "app", "1")
	assert.ErrorIs(t, h.Release(context.Background(), "dock", "spoke-3"), sdk.ErrHeldBySelector)

	applyRollout(t, fleet.Hub.Config, "dock", twoWaves("dock", nil))
	requireRollout(t, h, "dock", fgv1alpha1.RolloutComplete, allServeOf(3, 2))
	requireVersion(t, spokes["spoke-3"], "app", "2")
}

func allServeOf(n int, rev int64) map[string]int64 {
	out := map[string]int64{}
	for i := 1; i <= n; i++ {
		out[fmt.Sprintf("spoke-%d", i)] = rev
	}
	return out
}

// rolloutCluster is the named cluster's entry in the hub's view of the
// graph's rollout.
func rolloutCluster(t require.TestingT, h *sdk.Hub, graphName, cluster string) fgv1alpha1.RolloutCluster {
	st, ok := h.Rollout(graphName)
	require.True(t, ok)
	for _, c := range st.Clusters {
		if c.Name == cluster {
			return c
		}
	}
	require.Failf(t, "no such cluster", "%s in the rollout of %s: %+v", cluster, graphName, st.Clusters)
	return fgv1alpha1.RolloutCluster{}
}

// printedColumn is the named column of the GraphRollout's row as the API
// server prints it for kubectl get (the Table form), split at commas.
func printedColumn(t *testing.T, cluster *fgtesting.Cluster, name, column string) []string {
	t.Helper()
	row, err := cluster.Printed(context.Background(), fgv1alpha1.GroupVersion.WithResource("graphrollouts"), "", name)
	require.NoError(t, err)
	require.Contains(t, row, column)
	cell, _ := row[column].(string)
	if cell == "" {
		return nil
	}
	return strings.Split(cell, ",")
}
