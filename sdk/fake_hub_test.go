package sdk_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// fakeWait bounds each step of the fake-cluster tests; a step takes
// milliseconds, the bound only keeps a broken build from hanging.
const fakeWait = 10 * time.Second

var fakeWebAppGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "WebApp"}

// startFakeFleet runs a Hub over two fake clusters, a and b, in a
// multicluster manager whose own cluster is never contacted: the RGD
// controller is off (graphs are registered from Go), and so are rollouts,
// whose GraphRollouts live on the hub cluster (a hub that cannot read them
// serves no revision until it can).
func startFakeFleet(t *testing.T) (*sdk.Hub, map[string]*fgtesting.FakeCluster) {
	t.Helper()
	h, clusters, _ := startStoppableFakeFleet(t)
	return h, clusters
}

// startStoppableFakeFleet is startFakeFleet that can stop the hub early.
func startStoppableFakeFleet(t *testing.T) (*sdk.Hub, map[string]*fgtesting.FakeCluster, func()) {
	t.Helper()
	ctx := context.Background()
	provider := fgtesting.NewFakeProvider()
	clusters := map[string]*fgtesting.FakeCluster{}
	for _, name := range []string{"a", "b"} {
		cl, err := provider.AddCluster(ctx, name, fgtesting.FakeClusterOptions{})
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		clusters[name] = cl
	}
	h, err := sdk.NewHub(provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Compile: sdk.CompileOptions{DisableSchemaResolver: true}, Rollouts: sdk.RolloutOptions{Disable: true}})
	require.NoError(t, err)
	mgr, err := mcmanager.New(&rest.Config{Host: "https://127.0.0.1:1"}, provider, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	stop := fgtesting.StartStoppable(t, mgr.Start)
	return h, clusters, stop
}

func fakeWebApp(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": name}}}
	u.SetGroupVersionKind(fakeWebAppGVK)
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

// eventuallyOnEach waits until check passes on every cluster.
func eventuallyOnEach(t *testing.T, clusters map[string]*fgtesting.FakeCluster, what string,
	check func(ct *assert.CollectT, c client.Client)) {
	t.Helper()
	for name, cl := range clusters {
		require.EventuallyWithT(t, func(ct *assert.CollectT) { check(ct, cl.GetClient()) },
			fakeWait, time.Millisecond, "cluster %s: %s", name, what)
	}
}

func fakeGet(c client.Client, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u)
}

// The quickstart WebApp graph, served by a real Hub on two fake clusters:
// its CRD is established on both, an instance becomes ACTIVE with its
// children and the CRD's defaults, a changed child is put back, and
// deleting the instance removes it and its children. No API server runs.
func TestFakeFleetServesTheWebAppGraph(t *testing.T) {
	h, clusters := startFakeFleet(t)
	ctx := context.Background()
	start := time.Now()
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "../examples/quickstart/webapp.yaml")))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := h.FleetStatus("webapp")
		assert.Len(ct, st.Clusters, 2)
		for _, c := range st.Clusters {
			assert.Equal(ct, sdk.CRDEstablished, c.CRD, "cluster %s", c.Cluster)
		}
	}, fakeWait, time.Millisecond, "the WebApp CRD is established on both fake clusters")
	t.Logf("established on both clusters after %v", time.Since(start))

	for _, cl := range clusters {
		require.NoError(t, cl.GetClient().Create(ctx, fakeWebApp("shop")))
	}
	eventuallyOnEach(t, clusters, "the instance becomes ACTIVE", func(ct *assert.CollectT, c client.Client) {
		u, err := fakeGet(c, fakeWebAppGVK, "shop")
		require.NoError(ct, err)
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		assert.Equal(ct, "ACTIVE", state)
		dep, _, _ := unstructured.NestedString(u.Object, "status", "deployment")
		assert.Equal(ct, "shop", dep)
	})
	for _, cl := range clusters {
		c := cl.GetClient()
		inst, err := fakeGet(c, fakeWebAppGVK, "shop")
		require.NoError(t, err)
		image, _, _ := unstructured.NestedString(inst.Object, "spec", "image")
		assert.Equal(t, "nginx", image, "the CRD's default is applied")
		assert.NotEmpty(t, inst.GetUID())
		cm := &corev1.ConfigMap{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop-config"}, cm))
		assert.Equal(t, map[string]string{"image": "nginx", "port": "80"}, cm.Data)
	}
	t.Logf("ACTIVE on both clusters after %v", time.Since(start))

	// Drift on a: someone edits the ConfigMap; the runtime puts it back.
	a := clusters["a"].GetClient()
	cm := &corev1.ConfigMap{}
	require.NoError(t, a.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop-config"}, cm))
	cm.Data["image"] = "evil"
	require.NoError(t, a.Update(ctx, cm))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := &corev1.ConfigMap{}
		require.NoError(ct, a.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop-config"}, got))
		assert.Equal(ct, "nginx", got.Data["image"])
	}, fakeWait, time.Millisecond, "the drifted child is restored")
	t.Logf("drift repaired after %v", time.Since(start))

	for _, cl := range clusters {
		require.NoError(t, cl.GetClient().Delete(ctx, fakeWebApp("shop")))
	}
	eventuallyOnEach(t, clusters, "the instance and its children are gone", func(ct *assert.CollectT, c client.Client) {
		_, err := fakeGet(c, fakeWebAppGVK, "shop")
		assert.True(ct, apierrors.IsNotFound(err), "instance: %v", err)
		children := map[string]client.Object{"shop-config": &corev1.ConfigMap{}, "shop": &appsv1.Deployment{}}
		for name, obj := range children {
			err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, obj)
			assert.True(ct, apierrors.IsNotFound(err), "%T %s: %v", obj, name, err)
		}
		err = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, &corev1.Service{})
		assert.True(ct, apierrors.IsNotFound(err), "Service shop: %v", err)
	})
	t.Logf("registered, ACTIVE, repaired and deleted on two fake clusters in %v", time.Since(start))
}

// The hub cluster can be a fake one too: an RGD written to it is compiled
// by the RGD controller and served on the fake spokes, and its status
// reports the fleet.
func TestFakeHubClusterRunsTheRGDController(t *testing.T) {
	ctx := context.Background()
	rgdCRD, err := v1alpha1.CRD()
	require.NoError(t, err)
	hubCluster := fgtesting.NewFakeCluster(fgtesting.FakeClusterOptions{
		Scheme: fgtesting.NewScheme(), Objects: []client.Object{rgdCRD},
	})
	t.Cleanup(hubCluster.Close)
	provider := fgtesting.NewFakeProvider()
	spoke, err := provider.AddCluster(ctx, "a", fgtesting.FakeClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(spoke.Close)

	h, err := sdk.NewHub(provider, sdk.Options{Compile: sdk.CompileOptions{DisableSchemaResolver: true}})
	require.NoError(t, err)
	mgr, err := mcmanager.New(hubCluster.GetConfig(), provider, hubCluster.ManagerOptions(manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	}))
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	fgtesting.Start(t, mgr.Start)

	start := time.Now()
	require.NoError(t, hubCluster.GetClient().Create(ctx, readRGD(t, "../examples/quickstart/webapp.yaml")))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, hubCluster.GetClient().Get(ctx, client.ObjectKey{Name: "webapp"}, rgd))
		ready := meta.FindStatusCondition(rgd.Status.Conditions, v1alpha1.ConditionReady)
		require.NotNil(ct, ready, "conditions: %v", rgd.Status.Conditions)
		assert.Equal(ct, metav1.ConditionTrue, ready.Status, "%s: %s", ready.Reason, ready.Message)
	}, fakeWait, time.Millisecond, "the RGD on the fake hub cluster becomes Ready")
	require.NoError(t, spoke.GetClient().Create(ctx, fakeWebApp("shop")))
	eventuallyOnEach(t, map[string]*fgtesting.FakeCluster{"a": spoke}, "the instance becomes ACTIVE",
		func(ct *assert.CollectT, c client.Client) {
			u, err := fakeGet(c, fakeWebAppGVK, "shop")
			require.NoError(ct, err)
			state, _, _ := unstructured.NestedString(u.Object, "status", "state")
			assert.Equal(ct, "ACTIVE", state)
		})
	t.Logf("RGD Ready and instance ACTIVE after %v", time.Since(start))
}

// A hub that stops leaves no per-cluster series behind: an embedder that
// runs a new hub in the same process must not see the old one's clusters
// in its metrics, even for reconciles that were in flight at the stop.
func TestStoppedHubLeavesNoClusterSeries(t *testing.T) {
	t.Parallel() // its graph's name is its own: no other test has series for it
	h, clusters, stop := startStoppableFakeFleet(t)
	ctx := context.Background()
	rgd := readRGD(t, "../examples/quickstart/webapp.yaml")
	rgd.Name = "series-webapp"
	require.NoError(t, h.RegisterGraph(ctx, rgd))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := h.FleetStatus("series-webapp")
		assert.Len(ct, st.Clusters, 2)
		for _, c := range st.Clusters {
			assert.Equal(ct, sdk.CRDEstablished, c.CRD, "cluster %s", c.Cluster)
		}
	}, fakeWait, time.Millisecond, "the CRD is established on both fake clusters")
	for i := range 20 {
		for _, cl := range clusters {
			require.NoError(t, cl.GetClient().Create(ctx, fakeWebApp(fmt.Sprintf("shop-%d", i))))
		}
	}
	require.Eventually(t, func() bool { return len(graphSeries(t, "series-webapp")) > 0 }, fakeWait, time.Millisecond,
		"reconciles are recorded while the hub runs")
	stop()
	assert.Empty(t, graphSeries(t, "series-webapp"), "series left after the hub stopped")
}

// graphSeries lists the metric families that have a series for graph.
func graphSeries(t *testing.T, graph string) []string {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	var out []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "graph" && l.GetValue() == graph {
					out = append(out, f.GetName())
				}
			}
		}
	}
	return out
}
