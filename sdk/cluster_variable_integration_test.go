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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var localeGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Locale"}

// localeRGD reads the cluster it is served on: replicas and a ConfigMap
// value from its tier label, a ConfigMap only on GPU clusters, and the
// cluster's name in the instance status.
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

// One RGD, two spokes registered by kubeconfig Secrets with different
// cluster.fleetgraph.dev/ labels: each spoke's children follow its own
// labels, and follow them again when a Secret is relabelled.
func TestGraphsReadTheClusterTheyServe(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 2) // its own: the secret provider engages every kubeconfig Secret on its hub cluster
	h, err := sdk.NewHub(secret.New(secret.Options{Safety: secret.Safety{AllowLoopback: true}}), sdk.Options{DisableRGDController: true})
	require.NoError(t, err)
	fgtesting.Start(t, func(ctx context.Context) error { return h.Run(ctx, fleet.Hub.Config) })

	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	hub := newClient(t, fleet.Hub.Config)
	require.NoError(t, hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}))
	prod, dev := fleet.Spokes()[0], fleet.Spokes()[1]
	labels := map[string]map[string]string{
		prod.Name: {secret.LabelPrefix + "tier": "prod", secret.LabelPrefix + "gpu": "true"},
		dev.Name:  {secret.LabelPrefix + "tier": "dev"},
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
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, localeRGD)))
	clients := clientsOf(t, fleet)
	for _, s := range fleet.Spokes() {
		require.NoError(t, h.WaitServable(ctx, "locale", s.Name))
		createWhenServed(t, clients[s.Name], instance(localeGVK, "web", map[string]any{}))
	}

	want := map[string]localeChildren{
		prod.Name: {settings: map[string]string{"cluster": prod.Name, "tier": "prod"}, replicas: 3, gpu: true, servedBy: prod.Name},
		dev.Name:  {settings: map[string]string{"cluster": dev.Name, "tier": "dev"}, replicas: 1, gpu: false, servedBy: dev.Name},
	}
	requireLocales(t, clients, want)

	// Relabel: dev becomes a prod GPU cluster, prod loses its GPU.
	relabel(t, hub, dev.Name, map[string]string{secret.LabelPrefix + "tier": "prod", secret.LabelPrefix + "gpu": "true"})
	relabel(t, hub, prod.Name, map[string]string{secret.LabelPrefix + "tier": "prod"})
	start := time.Now()
	want[dev.Name] = localeChildren{settings: map[string]string{"cluster": dev.Name, "tier": "prod"}, replicas: 3, gpu: true, servedBy: dev.Name}
	want[prod.Name] = localeChildren{settings: map[string]string{"cluster": prod.Name, "tier": "prod"}, replicas: 3, gpu: false, servedBy: prod.Name}
	requireLocales(t, clients, want)
	t.Logf("relabelled spokes' children followed in %v (labels polled every %v)", time.Since(start), sdkClusterLabelsPoll)
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
