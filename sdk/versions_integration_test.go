//go:build integration

package sdk_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// paintRGD is version 1: one ConfigMap per instance.
const paintRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: paint
  generation: 1
spec:
  schema:
    apiVersion: v1alpha1
    kind: Paint
    spec:
      color: string | default="red"
      finish: string | default="matte"
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-paint
      data:
        color: ${schema.spec.color}
`

// paintBreakingRGD drops a field served instances may hold: refused without
// the opt-in.
const paintBreakingRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: paint
  generation: 2
spec:
  schema:
    apiVersion: v1alpha1
    kind: Paint
    spec:
      color: string | default="red"
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-paint
      data:
        color: ${schema.spec.color}
        version: "2"
`

// paintWidgetRGD is compatible with version 1 but needs a kind (Widget)
// that spoke-2 does not serve.
const paintWidgetRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: paint
  generation: 3
spec:
  schema:
    apiVersion: v1alpha1
    kind: Paint
    spec:
      color: string | default="red"
      finish: string | default="matte"
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-paint
      data:
        color: ${schema.spec.color}
        version: "3"
  - id: widget
    template:
      apiVersion: test.fleetgraph.dev/v1
      kind: Widget
      metadata:
        name: ${schema.metadata.name}
      spec:
        color: ${schema.spec.color}
`

var paintGVK = webAppGVK.GroupVersion().WithKind("Paint")

// served maps each cluster to the graph's status there.
func served(h *sdk.Hub, graph string) map[string]hub.ClusterStatus {
	out := map[string]hub.ClusterStatus{}
	for _, c := range h.FleetStatus(graph).Clusters {
		out[c.Cluster] = c
	}
	return out
}

// An update a cluster cannot take (a breaking change without the opt-in, a
// child kind the cluster lacks) leaves the previous version serving there:
// instances are created, repaired and deleted by it, and FleetStatus names
// both versions. Clusters that can take the update move on.
func TestRefusedUpdateKeepsPreviousVersionServing(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 2)
	require.NoError(t, fleet.Spoke("spoke-1").InstallCRDs(widgetCRD()))
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{DisableRGDController: true})
	ctx := context.Background()
	c1 := newClient(t, fleet.Spoke("spoke-1").Config)
	c2 := newClient(t, fleet.Spoke("spoke-2").Config)

	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, paintRGD)))
	createWhenServed(t, c1, instance(paintGVK, "before", map[string]any{"color": "blue"}))
	requireState(t, c1, paintGVK, "before", "ACTIVE")

	// Generation 2 is breaking: refused everywhere, generation 1 serves on.
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, paintBreakingRGD)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := served(h, "paint")
		for _, name := range []string{"spoke-1", "spoke-2"} {
			c := st[name]
			assert.Equal(ct, hub.CRDIncompatible, c.CRD, name)
			assert.Equal(ct, int64(2), c.Generation, name)
			assert.True(ct, c.Serving, name)
			assert.Equal(ct, int64(1), c.ServedGeneration, name)
			assert.Contains(ct, c.Explain(), "serving generation 1; generation 2 not served yet", name)
		}
	}, wait, tick)
	requireServedBy(t, c1, "during-breaking", "1")

	// Generation 3 is compatible with 1 but needs Widget: spoke-1 takes it,
	// spoke-2 (no Widget) keeps generation 1.
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, paintWidgetRGD)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := served(h, "paint")
		assert.Equal(ct, hub.CRDEstablished, st["spoke-1"].CRD)
		assert.Equal(ct, int64(3), st["spoke-1"].ServedGeneration)
		assert.True(ct, st["spoke-1"].Healthy())
		assert.Equal(ct, hub.CRDIncompatible, st["spoke-2"].CRD)
		assert.Contains(ct, st["spoke-2"].Message, "Kind=Widget")
		assert.Equal(ct, int64(3), st["spoke-2"].Generation)
		assert.Equal(ct, int64(1), st["spoke-2"].ServedGeneration)
	}, wait, tick)
	summary := h.FleetStatus("paint").Summary()
	require.Len(t, summary.UnhealthyClusters, 1)
	assert.Equal(t, "spoke-2", summary.UnhealthyClusters[0].Name)
	assert.Contains(t, summary.UnhealthyClusters[0].Message, "serving generation 1; generation 3 not served yet")

	requireServedBy(t, c2, "on-two", "1")
	requireServedBy(t, c1, "on-one", "3")
	createWhenServed(t, c1, instance(paintGVK, "with-widget", map[string]any{"color": "green"}))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.fleetgraph.dev", Version: "v1", Kind: "Widget"})
		assert.NoError(ct, c1.Get(ctx, client.ObjectKey{Namespace: "default", Name: "with-widget"}, w))
	}, wait, tick, "generation 3 made the Widget on spoke-1")
}

// requireServedBy creates an instance, waits until it is ACTIVE with its
// ConfigMap written by the given version, repairs drift on that ConfigMap,
// then deletes the instance and waits until it and its ConfigMap are gone.
func requireServedBy(t *testing.T, c client.Client, name, version string) {
	t.Helper()
	ctx := context.Background()
	createWhenServed(t, c, instance(paintGVK, name, map[string]any{"color": "green"}))
	requireState(t, c, paintGVK, name, "ACTIVE")
	wantVersion := version
	if version == "1" {
		wantVersion = "" // version 1 writes no version key
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		data, err := configMapData(c, name+"-paint")
		require.NoError(ct, err)
		assert.Equal(ct, "green", data["color"])
		assert.Equal(ct, wantVersion, data["version"])
	}, wait, tick, "%s is served by version %s", name, version)

	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name + "-paint"}, cm))
	cm.Data["color"] = "drifted"
	require.NoError(t, c.Update(ctx, cm))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		data, err := configMapData(c, name+"-paint")
		require.NoError(ct, err)
		assert.Equal(ct, "green", data["color"])
	}, wait, tick, "drift on %s is repaired", name)

	require.NoError(t, c.Delete(ctx, instance(paintGVK, name, nil)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := instance(paintGVK, name, nil)
		assert.True(ct, apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(u), u)), "instance gone")
		_, err := configMapData(c, name+"-paint")
		assert.True(ct, apierrors.IsNotFound(err), "ConfigMap gone")
	}, wait, tick, "deleting %s", name)
}
