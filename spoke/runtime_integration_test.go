//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	wait = 60 * time.Second
	tick = 100 * time.Millisecond
)

// The runtime alone, as a platform's agent runs it inside its cluster: no
// hub, a graph compiled from an RGD file, its CRD installed by the
// platform, the runtime added to a controller-runtime manager. An instance
// becomes ACTIVE with its children, drift is put back, and deleting the
// instance deletes its children and then lets it go.
func TestARuntimeAloneServesAGraph(t *testing.T) {
	cl, err := fgtesting.StartCluster("agent", fgtesting.ClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cl.Stop()) })
	c, err := client.New(cl.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)

	rgds, err := v1alpha1.LoadFile("testdata/webapp-rgd.yaml")
	require.NoError(t, err)
	g, err := graph.Compile(rgds[0], graph.Options{})
	require.NoError(t, err)
	installCRD(t, c, g.CRD)

	mgr, err := manager.New(cl.Config, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	rt := spoke.New(spoke.Options{})
	require.NoError(t, rt.SetupWithManager(mgr))
	require.NoError(t, rt.Serve(spoke.Version{Graph: g, Revision: 7}))
	startManager(t, mgr)

	shop := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": "shop"}}}
	shop.SetGroupVersionKind(g.Instance.GVK)
	shop.SetNamespace("default")
	shop.SetName("shop")
	require.NoError(t, c.Create(t.Context(), shop))

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := get(ct, c, g.Instance.GVK, "shop")
		state, _, _ := unstructured.NestedString(got.Object, "status", "state")
		assert.Equal(ct, "ACTIVE", state, "status %v", got.Object["status"])
		name, _, _ := unstructured.NestedString(got.Object, "status", "deploymentName")
		assert.Equal(ct, "shop", name, "status projected from a child")
		assert.Equal(ct, map[string]spoke.Count{"": {Total: 1, Ready: 1, Confirmed: 1, Reconciled: 1, Counted: true}}, counts(rt.Counts("webapp")))
	}, wait, tick)
	cm := get(t, c, configMapKind, "shop-config")
	assert.Equal(t, "webapp", cm.GetLabels()["fleetgraph.dev/graph"], "children carry their graph")
	get(t, c, deploymentKind, "shop")
	get(t, c, serviceKind, "shop")
	served := rt.Served("webapp")[mcmanager.LocalCluster]
	assert.Same(t, g, served.Graph)
	assert.Equal(t, int64(7), served.Revision, "the version served is the one given")

	t.Run("a child edited by hand is put back", func(t *testing.T) {
		require.NoError(t, unstructured.SetNestedField(cm.Object, "busybox", "data", "image"))
		require.NoError(t, c.Update(t.Context(), cm))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			image, _, _ := unstructured.NestedString(get(ct, c, configMapKind, "shop-config").Object, "data", "image")
			assert.Equal(ct, "nginx", image)
		}, wait, tick)
	})

	t.Run("a child deleted by hand comes back", func(t *testing.T) {
		svc := get(t, c, serviceKind, "shop")
		require.NoError(t, c.Delete(t.Context(), svc))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NotEqual(ct, svc.GetUID(), get(ct, c, serviceKind, "shop").GetUID(), "a new Service")
		}, wait, tick)
	})

	t.Run("deleting the instance deletes its children, then the instance", func(t *testing.T) {
		require.NoError(t, c.Delete(t.Context(), get(t, c, g.Instance.GVK, "shop")))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			for _, o := range []struct {
				gvk  schema.GroupVersionKind
				name string
			}{{g.Instance.GVK, "shop"}, {configMapKind, "shop-config"}, {deploymentKind, "shop"}, {serviceKind, "shop"}} {
				assert.True(ct, gone(c, o.gvk, o.name), "%s %s is gone", o.gvk.Kind, o.name)
			}
		}, wait, tick)
	})
}

var (
	configMapKind  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	serviceKind    = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	deploymentKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

// installCRD creates crd and waits until it is established, as a platform
// that installs its CRDs by GitOps would.
func installCRD(t *testing.T, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	require.NoError(t, c.Create(t.Context(), crd.DeepCopy()))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(ct, c.Get(context.Background(), client.ObjectKeyFromObject(crd), got))
		established := false
		for _, cond := range got.Status.Conditions {
			established = established || cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
		}
		assert.True(ct, established, "CRD %s established", crd.Name)
	}, wait, tick)
}

// startManager starts mgr and stops it, waiting for it, on cleanup.
func startManager(t *testing.T, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// get reads the named object of kind gvk in namespace default, failing t
// if it cannot.
func get(t require.TestingT, c client.Client, gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, u),
		fmt.Sprintf("%s %s", gvk.Kind, name))
	return u
}

// gone reports whether the named object of kind gvk in namespace default
// does not exist.
func gone(c client.Client, gvk schema.GroupVersionKind, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return apierrors.IsNotFound(c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, u))
}

// counts keys a Runtime's counts by cluster name.
func counts[K ~string](in map[K]spoke.Count) map[string]spoke.Count {
	out := make(map[string]spoke.Count, len(in))
	for k, v := range in {
		out[string(k)] = v
	}
	return out
}
