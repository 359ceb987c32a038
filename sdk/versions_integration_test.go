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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	rgdctrl "github.com/fleetgraph/fleetgraph/internal/rgd"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
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
func served(h *sdk.Hub, graph string) map[string]sdk.ClusterStatus {
	out := map[string]sdk.ClusterStatus{}
	for _, c := range h.FleetStatus(graph).Clusters {
		out[c.Cluster] = c
	}
	return out
}

// An update a cluster cannot take (a breaking change without the opt-in, a
// child kind the cluster lacks) leaves the previous version serving there:
// instances are created, repaired and deleted by it, and FleetStatus names
// both versions. Clusters that can take the update move on. A new hub on the
// same clusters finds the served versions again from the hub's records.
func TestRefusedUpdateKeepsPreviousVersionServing(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 2) // its own: only spoke-1 serves Widget
	require.NoError(t, fleet.Spoke("spoke-1").InstallCRDs(widgetCRD()))
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h, stopHub := startStoppableHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
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
			assert.Equal(ct, sdk.CRDIncompatible, c.CRD, name)
			assert.Equal(ct, int64(2), c.Generation, name)
			assert.True(ct, c.Serving, name)
			assert.Equal(ct, int64(1), c.ServedGeneration, name)
			assert.Contains(ct, c.Explain(), "serving revision 1; revision 2 cannot be served: CRD Incompatible", name)
			assert.Equal(ct, sdk.ReasonIncompatible, c.Reason, name)
		}
	}, wait, tick)
	requireServedBy(t, c1, "during-breaking", "1")

	// Generation 3 is compatible with 1 but needs Widget: spoke-1 takes it,
	// spoke-2 (no Widget) keeps generation 1.
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, paintWidgetRGD)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := served(h, "paint")
		assert.Equal(ct, sdk.CRDEstablished, st["spoke-1"].CRD)
		assert.Equal(ct, int64(3), st["spoke-1"].ServedGeneration)
		assert.True(ct, st["spoke-1"].Healthy())
		assert.Equal(ct, sdk.CRDIncompatible, st["spoke-2"].CRD)
		assert.Contains(ct, st["spoke-2"].Message, "Kind=Widget")
		assert.Equal(ct, int64(3), st["spoke-2"].Generation)
		assert.Equal(ct, int64(1), st["spoke-2"].ServedGeneration)
	}, wait, tick)
	summary := rgdctrl.Summary(h.FleetStatus("paint"))
	require.Len(t, summary.UnhealthyClusters, 1)
	assert.Equal(t, "spoke-2", summary.UnhealthyClusters[0].Name)
	assert.Contains(t, summary.UnhealthyClusters[0].Message, "serving revision 1; revision 3 cannot be served: CRD Incompatible")
	assert.Equal(t, string(sdk.ReasonIncompatible), summary.UnhealthyClusters[0].Reason)

	requireServedBy(t, c2, "on-two", "1")
	requireServedBy(t, c1, "on-one", "3")
	createWhenServed(t, c1, instance(paintGVK, "with-widget", map[string]any{"color": "green"}))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.fleetgraph.dev", Version: "v1", Kind: "Widget"})
		assert.NoError(ct, c1.Get(ctx, client.ObjectKey{Namespace: "default", Name: "with-widget"}, w))
	}, wait, tick, "generation 3 made the Widget on spoke-1")

	// The hub keeps a numbered record of every spec it was given.
	hubClient := newClient(t, fleet.Hub.Config)
	for rev, gen := range map[int64]int64{1: 1, 2: 2, 3: 3} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind("GraphRevision"))
		require.NoError(t, hubClient.Get(ctx, client.ObjectKey{Name: fgv1alpha1.RevisionName("paint", rev)}, u))
		got, _, _ := unstructured.NestedInt64(u.Object, "spec", "snapshot", "generation")
		assert.Equal(t, gen, got, "revision %d records generation %d", rev, gen)
	}

	// A new hub on the same clusters, given only the latest RGD, finds the
	// revision each cluster served: spoke-2 keeps generation 1.
	stopHub()
	provider2, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h2, _ := startStoppableHub(t, fleet.Hub.Config, provider2, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, h2.RegisterGraph(ctx, rgdFromString(t, paintWidgetRGD)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := served(h2, "paint")
		assert.Equal(ct, sdk.CRDEstablished, st["spoke-1"].CRD)
		assert.Equal(ct, int64(3), st["spoke-1"].ServedGeneration)
		assert.Equal(ct, sdk.CRDIncompatible, st["spoke-2"].CRD)
		assert.True(ct, st["spoke-2"].Serving)
		assert.Equal(ct, int64(1), st["spoke-2"].ServedGeneration)
	}, wait, tick)
	requireServedBy(t, c2, "after-restart", "1")
	requireServedBy(t, c1, "after-restart", "3")
}

// startStoppableHub is startHub with a function that stops the hub's
// manager and waits for it, as a hub process that exits. The manager has a
// scheme of its own with client-go's types only, as an embedder's often
// has: the Hub leaves it as it is, and its RGD controller reads through a
// client of its own (TestSetupWithManagerLeavesTheEmbeddersSchemeAlone).
func startStoppableHub(t testing.TB, cfg *rest.Config, provider multicluster.Provider, opts sdk.Options) (*sdk.Hub, func()) {
	t.Helper()
	h, err := sdk.NewHub(provider, opts)
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	stop := fgtesting.StartStoppable(t, mgr.Start)
	if opts.RGDs.InstallCRD && !opts.RGDs.DisableController {
		// The install runs as the manager starts: wait for it, as a
		// program applying RGDs right after starting a hub would.
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			c, err := client.New(cfg, client.Options{Scheme: fgtesting.NewScheme()})
			require.NoError(ct, err)
			assert.NoError(ct, c.List(context.Background(), &v1alpha1.ResourceGraphDefinitionList{}))
		}, wait, tick, "the hub installs the RGD CRD")
	}
	return h, stop
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

// An RGD object's revisions are numbered on the hub, owned by the RGD, and
// the latest number is on its status as lastIssuedRevision.
func TestRGDStatusNamesTheLastIssuedRevision(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1) // its own: the RGD controller claims every RGD on its hub cluster
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
	ctx := context.Background()
	hubClient := newClient(t, fleet.Hub.Config)
	rgd := rgdFromString(t, paintRGD)
	rgd.Generation = 0
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, hubClient.Create(ctx, rgd.DeepCopy()))
	}, wait, tick, "the RGD CRD is installed")

	lastIssued := func(ct *assert.CollectT) int64 {
		got := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, hubClient.Get(ctx, client.ObjectKey{Name: "paint"}, got))
		return got.Status.LastIssuedRevision
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) { assert.EqualValues(ct, 1, lastIssued(ct)) }, wait, tick)

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, hubClient.Get(ctx, client.ObjectKey{Name: "paint"}, got))
		got.Spec = rgdFromString(t, paintWidgetRGD).Spec
		assert.NoError(ct, hubClient.Update(ctx, got))
	}, wait, tick)
	require.EventuallyWithT(t, func(ct *assert.CollectT) { assert.EqualValues(ct, 2, lastIssued(ct)) }, wait, tick)

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind("GraphRevision"))
	require.NoError(t, hubClient.Get(ctx, client.ObjectKey{Name: "paint-r00002"}, u))
	require.Len(t, u.GetOwnerReferences(), 1)
	assert.Equal(t, "paint", u.GetOwnerReferences()[0].Name)
	gen, _, _ := unstructured.NestedInt64(u.Object, "spec", "snapshot", "generation")
	assert.EqualValues(t, 2, gen)
}
