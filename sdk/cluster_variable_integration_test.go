//go:build integration

package sdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var localeGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Locale"}

// localeRGD reads the cluster it is served on: replicas and a ConfigMap
// value from its tier label, a ConfigMap value from the platform's
// ClusterValues, a ConfigMap only on GPU clusters, and the cluster's name
// in the instance status.
const localeRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: locale
spec:
  schema:
    apiVersion: v1alpha1
    kind: Locale
    spec:
      image: string | default="nginx"
    status:
      servedBy: ${cluster.name}
  resources:
  - id: settings
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-settings
      data:
        cluster: ${cluster.name}
        tier: ${cluster.labels.?tier.orValue("none")}
        bucket: ${cluster.values.?bucket.orValue("none")}
  - id: app
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${schema.metadata.name}
      spec:
        replicas: '${cluster.labels.?tier.orValue("") == "prod" ? 3 : 1}'
        selector:
          matchLabels: {app: locale}
        template:
          metadata:
            labels: {app: locale}
          spec:
            containers:
            - name: app
              image: ${schema.spec.image}
  - id: gpu
    includeWhen:
    - ${cluster.labels.?gpu.orValue("") == "true"}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-gpu
      data:
        plugin: nvidia
`

// localeChildren is what a spoke serves for the instance "web".
type localeChildren struct {
	settings map[string]string
	replicas int32
	gpu      bool
	servedBy string
}

func readLocale(ct *assert.CollectT, c client.Client) localeChildren {
	ctx := context.Background()
	var out localeChildren
	cm := &corev1.ConfigMap{}
	if assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-settings"}, cm)) {
		out.settings = cm.Data
	}
	dep := &appsv1.Deployment{}
	if assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, dep)) && dep.Spec.Replicas != nil {
		out.replicas = *dep.Spec.Replicas
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-gpu"}, &corev1.ConfigMap{})
	assert.True(ct, err == nil || apierrors.IsNotFound(err), "reading web-gpu: %v", err)
	out.gpu = err == nil
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(localeGVK)
	if assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, u)) {
		out.servedBy, _, _ = unstructured.NestedString(u.Object, "status", "servedBy")
	}
	return out
}

// One RGD, three spokes registered by kubeconfig Secrets with different
// cluster.fleetgraph.dev/ labels: each spoke's children follow its own
// labels, and follow them again when a Secret is relabelled; values the
// platform gives by ClusterValues reach the clusters its selector picks,
// and changing them reconciles again only those clusters' instances.
func TestGraphsReadTheClusterTheyServe(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 3) // its own: the secret provider engages every kubeconfig Secret on its hub cluster, and ClusterValues there reach every Hub
	h, err := sdk.NewHub(secret.New(secret.Options{Safety: secret.Safety{AllowLoopback: true}}), sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, err)
	fgtesting.Start(t, func(ctx context.Context) error { return h.Run(ctx, fleet.Hub.Config) })

	ctx, cancel := context.WithTimeout(context.Background(), 4*wait)
	defer cancel()
	hub := newClient(t, fleet.Hub.Config)
	require.NoError(t, hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}))
	gpu, prod, dev := fleet.Spokes()[0], fleet.Spokes()[1], fleet.Spokes()[2]
	labels := map[string]map[string]string{
		gpu.Name:  {secret.LabelPrefix + "tier": "prod", secret.LabelPrefix + "gpu": "true", secret.LabelPrefix + "site": "a"},
		prod.Name: {secret.LabelPrefix + "tier": "prod", secret.LabelPrefix + "site": "b"},
		dev.Name:  {secret.LabelPrefix + "tier": "dev", secret.LabelPrefix + "site": "c"},
	}
	for _, s := range fleet.Spokes() {
		l := map[string]string{secret.DefaultSecretLabel: "true"}
		for k, v := range labels[s.Name] {
			l[k] = v
		}
		require.NoError(t, hub.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: secret.DefaultNamespace, Name: s.Name, Labels: l},
			Data:       map[string][]byte{secret.DefaultDataKey: s.Kubeconfig},
		}))
	}
	strict, err := sdk.NewHub(nil, sdk.Options{Compile: sdk.CompileOptions{Strict: true}})
	require.NoError(t, err)
	err = strict.RegisterGraph(ctx, rgdFromString(t, localeRGD))
	require.ErrorIs(t, err, graph.ErrExtension, "kro has no cluster variable")
	assert.Contains(t, err.Error(), `resource "settings": data.bucket: the cluster variable`)
	assert.Contains(t, err.Error(), `resource "gpu": includeWhen[0]: the cluster variable`)

	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, localeRGD)))
	clients := clientsOf(t, fleet)
	for _, s := range fleet.Spokes() {
		require.NoError(t, h.WaitServable(ctx, "locale", s.Name))
		createWhenServed(t, clients[s.Name], instance(localeGVK, "web", map[string]any{}))
	}

	want := map[string]localeChildren{
		gpu.Name:  {settings: settings(gpu.Name, "prod", "none"), replicas: 3, gpu: true, servedBy: gpu.Name},
		prod.Name: {settings: settings(prod.Name, "prod", "none"), replicas: 3, gpu: false, servedBy: prod.Name},
		dev.Name:  {settings: settings(dev.Name, "dev", "none"), replicas: 1, gpu: false, servedBy: dev.Name},
	}
	requireLocales(t, clients, want)

	// Relabel: dev becomes a prod GPU cluster, the GPU cluster loses its GPU.
	relabel(t, hub, dev.Name, map[string]string{secret.LabelPrefix + "tier": "prod", secret.LabelPrefix + "gpu": "true", secret.LabelPrefix + "site": "c"})
	relabel(t, hub, gpu.Name, map[string]string{secret.LabelPrefix + "tier": "prod", secret.LabelPrefix + "site": "a"})
	start := time.Now()
	want[dev.Name] = localeChildren{settings: settings(dev.Name, "prod", "none"), replicas: 3, gpu: true, servedBy: dev.Name}
	want[gpu.Name] = localeChildren{settings: settings(gpu.Name, "prod", "none"), replicas: 3, gpu: false, servedBy: gpu.Name}
	requireLocales(t, clients, want)
	t.Logf("relabelled spokes' children followed in %v (the provider tells the relabel; labels also polled every %v)", time.Since(start), sdkClusterLabelsPoll)

	// Relabel back, so that prod is one cluster and dev another again.
	relabel(t, hub, dev.Name, map[string]string{secret.LabelPrefix + "tier": "dev", secret.LabelPrefix + "site": "c"})
	want[dev.Name] = localeChildren{settings: settings(dev.Name, "dev", "none"), replicas: 1, gpu: false, servedBy: dev.Name}
	requireLocales(t, clients, want)

	// The platform's values for prod clusters reach those two and only
	// them: the dev cluster's instance is not reconciled again.
	devReconciles := settledReconciles(t, "locale", dev.Name)
	values := &fgv1alpha1.ClusterValues{
		ObjectMeta: metav1.ObjectMeta{Name: "locale-prod"},
		Spec: fgv1alpha1.ClusterValuesSpec{
			Graph:           "locale",
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
			Values:          apiextensionsv1.JSON{Raw: []byte(`{"bucket": "s3://prod"}`)},
		},
	}
	require.NoError(t, hub.Create(ctx, values))
	start = time.Now()
	want[gpu.Name] = localeChildren{settings: settings(gpu.Name, "prod", "s3://prod"), replicas: 3, servedBy: gpu.Name}
	want[prod.Name] = localeChildren{settings: settings(prod.Name, "prod", "s3://prod"), replicas: 3, servedBy: prod.Name}
	requireLocales(t, clients, want)
	t.Logf("new ClusterValues reached their clusters' children in %v", time.Since(start))
	assert.Equal(t, devReconciles, reconciles(t, "locale", dev.Name), "the dev cluster's values did not change: its instance is not reconciled")
	requireValuesStatus(t, hub, "locale-prod", 2, metav1.ConditionFalse, "")

	// A change reaches the same clusters; a second object for the same
	// graph that disagrees wins by name, and the loser reports the conflict.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, hub.Get(ctx, client.ObjectKeyFromObject(values), values))
		values.Spec.Values.Raw = []byte(`{"bucket": "s3://prod-2"}`)
		require.NoError(ct, hub.Update(ctx, values))
	}, wait, tick)
	want[gpu.Name] = localeChildren{settings: settings(gpu.Name, "prod", "s3://prod-2"), replicas: 3, servedBy: gpu.Name}
	want[prod.Name] = localeChildren{settings: settings(prod.Name, "prod", "s3://prod-2"), replicas: 3, servedBy: prod.Name}
	requireLocales(t, clients, want)
	gpuReconciles := settledReconciles(t, "locale", gpu.Name)
	require.NoError(t, hub.Create(ctx, &fgv1alpha1.ClusterValues{
		ObjectMeta: metav1.ObjectMeta{Name: "locale-prod-site-b"},
		Spec: fgv1alpha1.ClusterValuesSpec{
			Graph:           "locale",
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod", "site": "b"}},
			Values:          apiextensionsv1.JSON{Raw: []byte(`{"bucket": "s3://site-b"}`)},
		},
	}))
	want[prod.Name] = localeChildren{settings: settings(prod.Name, "prod", "s3://site-b"), replicas: 3, servedBy: prod.Name}
	requireLocales(t, clients, want)
	requireValuesStatus(t, hub, "locale-prod", 2, metav1.ConditionTrue,
		`key "bucket" is overridden by "locale-prod-site-b" on cluster "`+prod.Name+`"`)
	requireValuesStatus(t, hub, "locale-prod-site-b", 1, metav1.ConditionFalse, "")
	assert.Equal(t, devReconciles, reconciles(t, "locale", dev.Name), "nor for values that do not select it")
	assert.Equal(t, gpuReconciles, reconciles(t, "locale", gpu.Name), "the prod GPU cluster's values did not change")

	// Deleting the objects takes their values away.
	require.NoError(t, hub.DeleteAllOf(ctx, &fgv1alpha1.ClusterValues{}))
	want[gpu.Name] = localeChildren{settings: settings(gpu.Name, "prod", "none"), replicas: 3, servedBy: gpu.Name}
	want[prod.Name] = localeChildren{settings: settings(prod.Name, "prod", "none"), replicas: 3, servedBy: prod.Name}
	requireLocales(t, clients, want)
	assert.Equal(t, devReconciles, reconciles(t, "locale", dev.Name))
}

// settings is the data of the settings ConfigMap.
func settings(cluster, tier, bucket string) map[string]string {
	return map[string]string{"cluster": cluster, "tier": tier, "bucket": bucket}
}

// requireValuesStatus waits until the named ClusterValues is accepted,
// matches clusters clusters and has the conflict status given, with
// message if it is not empty.
func requireValuesStatus(t *testing.T, hub client.Client, name string, clusters int32, conflict metav1.ConditionStatus, message string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cv := &fgv1alpha1.ClusterValues{}
		require.NoError(ct, hub.Get(context.Background(), client.ObjectKey{Name: name}, cv))
		assert.Equal(ct, clusters, cv.Status.Clusters)
		assert.True(ct, meta.IsStatusConditionTrue(cv.Status.Conditions, fgv1alpha1.ClusterValuesAccepted))
		c := meta.FindStatusCondition(cv.Status.Conditions, fgv1alpha1.ClusterValuesConflict)
		if assert.NotNil(ct, c) {
			assert.Equal(ct, conflict, c.Status, c.Message)
			if message != "" {
				assert.Equal(ct, message, c.Message)
			}
		}
	}, wait, tick)
}

// settledReconciles waits until the graph's reconciles on the cluster
// have settled (the count did not move for a second of polls: a reconcile
// that changed a child counts once it has written the instance's status,
// after the child is seen) and returns their count.
func settledReconciles(t *testing.T, graphName, cluster string) float64 {
	t.Helper()
	const still = 10 // polls
	last, same := reconciles(t, graphName, cluster), 0
	require.Eventually(t, func() bool {
		now := reconciles(t, graphName, cluster)
		if now != last {
			last, same = now, 0
			return false
		}
		same++
		return same >= still
	}, wait, tick)
	return last
}

// reconciles is how many reconciles the spoke runtime ran for the graph's
// instances on the cluster (fleetgraph_spoke_reconcile_total).
func reconciles(t *testing.T, graphName, cluster string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != "fleetgraph_spoke_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var g, c bool
			for _, l := range m.GetLabel() {
				g = g || l.GetName() == "graph" && l.GetValue() == graphName
				c = c || l.GetName() == "cluster" && l.GetValue() == cluster
			}
			if g && c {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// sdkClusterLabelsPoll is the spoke runtime's default poll of cluster
// labels, which the Hub uses.
const sdkClusterLabelsPoll = 2 * time.Second

func requireLocales(t *testing.T, clients map[string]client.Client, want map[string]localeChildren) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		for name, w := range want {
			assert.Equal(ct, w, readLocale(ct, clients[name]), "spoke %s", name)
		}
	}, wait, tick)
}

// relabel replaces the cluster.fleetgraph.dev/ labels of a spoke's Secret.
func relabel(t *testing.T, hub client.Client, name string, labels map[string]string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		s := &corev1.Secret{}
		require.NoError(ct, hub.Get(context.Background(), client.ObjectKey{Namespace: secret.DefaultNamespace, Name: name}, s))
		l := map[string]string{secret.DefaultSecretLabel: "true"}
		for k, v := range labels {
			l[k] = v
		}
		s.Labels = l
		require.NoError(ct, hub.Update(context.Background(), s))
	}, wait, tick)
}

// In single-cluster mode (no provider) cluster.name is the name the
// platform gives the hub's own cluster (Options.Fleet.LocalClusterName), not
// multicluster-runtime's "" for it, and the cluster has no labels.
func TestClusterNameInSingleClusterMode(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 0) // its own: the hub cluster is the only spoke
	h, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Fleet: sdk.FleetOptions{LocalClusterName: "hub-east"}})
	require.NoError(t, err)
	fgtesting.Start(t, func(ctx context.Context) error { return h.Run(ctx, fleet.Hub.Config) })
	c := newClient(t, fleet.Hub.Config)
	require.NoError(t, h.RegisterGraph(context.Background(), rgdFromString(t, localeRGD)))
	createWhenServed(t, c, instance(localeGVK, "web", map[string]any{}))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, localeChildren{
			settings: map[string]string{"cluster": "hub-east", "tier": "none", "bucket": "none"},
			replicas: 1,
			servedBy: "hub-east",
		}, readLocale(ct, c))
	}, wait, tick)
}
