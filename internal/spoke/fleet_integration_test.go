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
	t.Parallel()
	fleet := sharedFleet(t)
	ctx := context.Background()
	const ns = "independent"
	g := compileAs(t, pairRGD, ns)
	a, b := newClient(t, fleet.Spokes()[0].Config), newClient(t, fleet.Spokes()[1].Config)
	for _, c := range []client.Client{a, b} {
		installCRD(t, c, g)
		createNamespace(t, c, ns)
	}
	provider, clusters := providerFor(t, ns, fleet.Spokes())
	rt := startRuntime(t, fleet, provider, spoke.Config{})
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))

	require.NoError(t, a.Create(ctx, newInstance(g, ns, "one", map[string]any{"value": "on-a"})))
	configMapData(t, a, ns, "one-right", "value", "on-a")
	stateIs(t, a, g, ns, "one", contract.StateActive)
	assert.Empty(t, ourConfigMaps(t, b, ns), "an instance on spoke A must create nothing on spoke B")

	require.NoError(t, b.Create(ctx, newInstance(g, ns, "two", map[string]any{"value": "on-b"})))
	configMapData(t, b, ns, "two-right", "value", "on-b")
	assert.Equal(t, []string{"one-left", "one-right"}, ourConfigMaps(t, a, ns))
	assert.Equal(t, []string{"two-left", "two-right"}, ourConfigMaps(t, b, ns))
	eventually(t, func() (bool, string) {
		counts := rt.Counts(g.Name)
		want := map[multicluster.ClusterName]spoke.Count{
			clusters[0]: {Total: 1, Ready: 1, Confirmed: 1, Reconciled: 1, Counted: true},
			clusters[1]: {Total: 1, Ready: 1, Confirmed: 1, Reconciled: 1, Counted: true},
		}
		return assert.ObjectsAreEqual(want, counts), fmt.Sprintf("counts %v", counts)
	})
}

func TestGraphServedAfterStartReachesEngagedClusters(t *testing.T) {
	t.Parallel()
	fleet := sharedFleet(t)
	ctx := context.Background()
	const ns = "served-late"
	g := compileAs(t, pairRGD, ns)
	s := fleet.Spokes()[0]
	c := newClient(t, s.Config)
	installCRD(t, c, g)
	createNamespace(t, c, ns)
	require.NoError(t, c.Create(ctx, newInstance(g, ns, "early", map[string]any{"value": "x"})))
	provider, _ := providerFor(t, ns, []*fgtesting.Cluster{s})
	rt := startRuntime(t, fleet, provider, spoke.Config{})
	eventually(t, func() (bool, string) {
		return len(rt.Clusters()) == 1, fmt.Sprintf("engaged: %v", rt.Clusters())
	})

	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	configMapData(t, c, ns, "early-right", "value", "x")
	stateIs(t, c, g, ns, "early", contract.StateActive)

	t.Run("a stopped graph no longer reconciles", func(t *testing.T) {
		rt.Stop(g.Name)
		require.Nil(t, rt.Counts(g.Name))
		require.NoError(t, c.Delete(ctx, configMapRef(ns, "early-left")))
		gone(t, c, ns, "early-left")
		require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
		configMapData(t, c, ns, "early-left", "value", "x")
	})
}

// TestRemovedSpokeStopsItsWorkWithoutLeaks counts every goroutine of the
// process, so it does not run in parallel with other tests.
func TestRemovedSpokeStopsItsWorkWithoutLeaks(t *testing.T) {
	fleet := sharedFleet(t)
	ctx := context.Background()
	const ns = "removed"
	g := compileAs(t, pairRGD, ns)
	first, second := fleet.Spokes()[0], fleet.Spokes()[1]
	provider, clusters := providerFor(t, ns, []*fgtesting.Cluster{first})
	rt := startRuntime(t, fleet, provider, spoke.Config{})
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	eventually(t, func() (bool, string) {
		return len(rt.Clusters()) == 1, fmt.Sprintf("engaged: %v", rt.Clusters())
	})

	// The spoke to remove: the fleet's second, under a name of its own.
	c := newClient(t, second.Config)
	installCRD(t, c, g)
	createNamespace(t, c, ns)
	for i := range 20 {
		require.NoError(t, c.Create(ctx, newInstance(g, ns, fmt.Sprintf("i%02d", i), map[string]any{})))
	}
	extra := ns + "-leaving"

	// Everything started from here on must be gone once the spoke is removed.
	ignore := goleak.IgnoreCurrent()
	require.NoError(t, provider.AddConfig(ctx, extra, second.Config))
	configMapData(t, c, ns, "i00-left", "value", "a") // reconciling has begun
	provider.Remove(extra)
	eventually(t, func() (bool, string) {
		return !slices.Contains(rt.Clusters(), multicluster.ClusterName(extra)), fmt.Sprintf("engaged: %v", rt.Clusters())
	})
	// The Runtime and the graph's controller each let go of the cluster
	// when its context ends, independently of each other.
	eventually(t, func() (bool, string) {
		_, served := rt.Counts(g.Name)[multicluster.ClusterName(extra)]
		return !served, "the removed spoke is still counted"
	})
	goleak.VerifyNone(t, append(upstreamLeaks, ignore)...)

	// The remaining spoke is still served.
	fc := newClient(t, first.Config)
	installCRD(t, fc, g)
	createNamespace(t, fc, ns)
	require.NoError(t, fc.Create(ctx, newInstance(g, ns, "still", map[string]any{})))
	configMapData(t, fc, ns, "still-right", "value", "a")
	_, err := configMap(c, ns, "still-left")
	require.True(t, apierrors.IsNotFound(err))
	require.Equal(t, []multicluster.ClusterName{clusters[0]}, rt.Clusters())
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
	t.Parallel()
	fleet := sharedFleet(t)
	ctx := context.Background()
	const ns = "sharing"
	pair, solo := compileAs(t, pairRGD, ns+"-pair"), compileAs(t, soloRGD, ns+"-solo")
	s := fleet.Spokes()[0]
	c := newClient(t, s.Config)
	installCRD(t, c, pair)
	installCRD(t, c, solo)
	createNamespace(t, c, ns)
	provider, _ := providerFor(t, ns, []*fgtesting.Cluster{s})
	rt := startRuntime(t, fleet, provider, spoke.Config{})
	require.NoError(t, rt.Serve(spoke.Version{Graph: pair}))
	require.NoError(t, c.Create(ctx, newInstance(pair, ns, "p", map[string]any{"value": "x"})))
	stateIs(t, c, pair, ns, "p", contract.StateActive)

	require.NoError(t, rt.Serve(spoke.Version{Graph: solo}))
	require.NoError(t, c.Create(ctx, newInstance(solo, ns, "s", map[string]any{"value": "y"})))
	stateIs(t, c, solo, ns, "s", contract.StateActive)
	putBack := func(name, value string) {
		t.Helper()
		require.NoError(t, c.Delete(ctx, configMapRef(ns, name)))
		configMapData(t, c, ns, name, "value", value)
	}
	putBack("s-solo", "y")
	putBack("p-left", "x")

	rt.Stop(solo.Name)
	putBack("p-left", "x")
	require.NoError(t, rt.Serve(spoke.Version{Graph: solo}))
	putBack("s-solo", "y")
	putBack("p-right", "x")
}
