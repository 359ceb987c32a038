//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const pairRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: pair
spec:
  schema:
    apiVersion: v1alpha1
    kind: Pair
    spec:
      value: string | default="a"
  resources:
  - id: left
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-left
      data:
        value: ${schema.spec.value}
  - id: right
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-right
      data:
        value: ${left.data.value}
`

// ourConfigMaps lists the ConfigMaps carrying our graph label in ns.
func ourConfigMaps(t testing.TB, c client.Client, ns string) []string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("ConfigMapList")
	require.NoError(t, c.List(context.Background(), list, client.InNamespace(ns), client.HasLabels{contract.LabelGraph}))
	var names []string
	for _, u := range list.Items {
		names = append(names, u.GetName())
	}
	slices.Sort(names)
	return names
}

func TestSpokesRunTheSameGraphIndependently(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 2)
	ctx := context.Background()
	g := compile(t, pairRGD)
	a, b := newClient(t, fleet.Spokes()[0].Config), newClient(t, fleet.Spokes()[1].Config)
	for _, c := range []client.Client{a, b} {
		installCRD(t, c, g)
		createNamespace(t, c, "team")
	}
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	rt := startRuntime(t, fleet, provider, spoke.Options{})
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))

	require.NoError(t, a.Create(ctx, newInstance(g, "team", "one", map[string]any{"value": "on-a"})))
	configMapData(t, a, "team", "one-right", "value", "on-a")
	stateIs(t, a, g, "team", "one", contract.StateActive)
	assert.Empty(t, ourConfigMaps(t, b, "team"), "an instance on spoke A must create nothing on spoke B")

	require.NoError(t, b.Create(ctx, newInstance(g, "team", "two", map[string]any{"value": "on-b"})))
	configMapData(t, b, "team", "two-right", "value", "on-b")
	assert.Equal(t, []string{"one-left", "one-right"}, ourConfigMaps(t, a, "team"))
	assert.Equal(t, []string{"two-left", "two-right"}, ourConfigMaps(t, b, "team"))
	eventually(t, func() (bool, string) {
		counts := rt.Counts("pair")
		want := map[multicluster.ClusterName]spoke.Count{
			multicluster.ClusterName(fleet.Spokes()[0].Name): {Total: 1, Ready: 1},
			multicluster.ClusterName(fleet.Spokes()[1].Name): {Total: 1, Ready: 1},
		}
		return assert.ObjectsAreEqual(want, counts), fmt.Sprintf("counts %v", counts)
	})
}

func TestGraphServedAfterStartReachesEngagedClusters(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 1)
	ctx := context.Background()
	g := compile(t, pairRGD)
	c := newClient(t, fleet.Spokes()[0].Config)
	installCRD(t, c, g)
	createNamespace(t, c, "team")
	require.NoError(t, c.Create(ctx, newInstance(g, "team", "early", map[string]any{"value": "x"})))
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	rt := startRuntime(t, fleet, provider, spoke.Options{})
	eventually(t, func() (bool, string) {
		return len(rt.Clusters()) == 1, fmt.Sprintf("engaged: %v", rt.Clusters())
	})

	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	configMapData(t, c, "team", "early-right", "value", "x")
	stateIs(t, c, g, "team", "early", contract.StateActive)

	t.Run("a stopped graph no longer reconciles", func(t *testing.T) {
		rt.Stop("pair")
		require.Nil(t, rt.Counts("pair"))
		require.NoError(t, c.Delete(ctx, configMapRef("team", "early-left")))
		gone(t, c, "team", "early-left")
		require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
		configMapData(t, c, "team", "early-left", "value", "x")
	})
}

func TestRemovedSpokeStopsItsWorkWithoutLeaks(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 1)
	ctx := context.Background()
	g := compile(t, pairRGD)
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	rt := startRuntime(t, fleet, provider, spoke.Options{})
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	eventually(t, func() (bool, string) {
		return len(rt.Clusters()) == 1, fmt.Sprintf("engaged: %v", rt.Clusters())
	})

	extra, err := fleet.AddSpoke()
	require.NoError(t, err)
	c := newClient(t, extra.Config)
	installCRD(t, c, g)
	createNamespace(t, c, "team")
	for i := range 20 {
		require.NoError(t, c.Create(ctx, newInstance(g, "team", fmt.Sprintf("i%02d", i), map[string]any{})))
	}

	// Everything started from here on must be gone once the spoke is removed.
	ignore := goleak.IgnoreCurrent()
	require.NoError(t, provider.AddConfig(ctx, extra.Name, extra.Config))
	configMapData(t, c, "team", "i00-left", "value", "a") // reconciling has begun
	provider.Remove(extra.Name)
	eventually(t, func() (bool, string) {
		return !slices.Contains(rt.Clusters(), multicluster.ClusterName(extra.Name)), fmt.Sprintf("engaged: %v", rt.Clusters())
	})
	// The Runtime and the graph's controller each let go of the cluster
	// when its context ends, independently of each other.
	eventually(t, func() (bool, string) {
		_, served := rt.Counts("pair")[multicluster.ClusterName(extra.Name)]
		return !served, "the removed spoke is still counted"
	})
	goleak.VerifyNone(t, append(upstreamLeaks, ignore)...)

	// The remaining spoke is still served.
	first := newClient(t, fleet.Spokes()[0].Config)
	installCRD(t, first, g)
	createNamespace(t, first, "team")
	require.NoError(t, first.Create(ctx, newInstance(g, "team", "still", map[string]any{})))
	configMapData(t, first, "team", "still-right", "value", "a")
	_, err = configMap(c, "team", "still-left")
	require.True(t, apierrors.IsNotFound(err))
}

const soloRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: solo
spec:
  schema:
    apiVersion: v1alpha1
    kind: Solo
    spec:
      value: string | default="s"
  resources:
  - id: only
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-solo
      data:
        value: ${schema.spec.value}
`

// TestGraphsOnOneClusterShareChildWatches: graphs on one cluster share one
// handler per child kind (shared_handlers.go). A graph served after
// another already watches ConfigMaps joins late, and both must go on
// getting events: a deleted child is put back at once (the resync is ten
// minutes away), through a graph stopping and being served again.
func TestGraphsOnOneClusterShareChildWatches(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 1)
	ctx := context.Background()
	pair, solo := compile(t, pairRGD), compile(t, soloRGD)
	c := newClient(t, fleet.Spokes()[0].Config)
	installCRD(t, c, pair)
	installCRD(t, c, solo)
	createNamespace(t, c, "team")
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	rt := startRuntime(t, fleet, provider, spoke.Options{})
	require.NoError(t, rt.Serve(spoke.Version{Graph: pair}))
	require.NoError(t, c.Create(ctx, newInstance(pair, "team", "p", map[string]any{"value": "x"})))
	stateIs(t, c, pair, "team", "p", contract.StateActive)

	require.NoError(t, rt.Serve(spoke.Version{Graph: solo}))
	require.NoError(t, c.Create(ctx, newInstance(solo, "team", "s", map[string]any{"value": "y"})))
	stateIs(t, c, solo, "team", "s", contract.StateActive)
	putBack := func(name, value string) {
		t.Helper()
		require.NoError(t, c.Delete(ctx, configMapRef("team", name)))
		configMapData(t, c, "team", name, "value", value)
	}
	putBack("s-solo", "y")
	putBack("p-left", "x")

	rt.Stop("solo")
	putBack("p-left", "x")
	require.NoError(t, rt.Serve(spoke.Version{Graph: solo}))
	putBack("s-solo", "y")
	putBack("p-right", "x")
}
