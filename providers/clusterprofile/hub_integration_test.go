//go:build integration

package clusterprofile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/providers/clusterprofile"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// placedRGD is a graph of one ConfigMap that shows the labels of the
// cluster it is served on.
func placedRGD(t *testing.T, name, kind string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	doc := `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: ` + name + `
spec:
  schema:
    apiVersion: v1alpha1
    kind: ` + kind + `
    spec: {}
  resources:
  - id: shown
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-labels
      data:
        color: ${cluster.labels.?color.orValue("none")}
        region: ${cluster.labels[?"` + clusterprofile.PropertyPrefix + `region"].orValue("none")}
`
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), rgd))
	return rgd
}

// A hub serves one graph where a ClusterProfile label places it and
// another where a property does; a graph reading cluster.labels follows a
// relabelled profile at once.
func TestAHubPlacesGraphsByProfileLabelsAndProperties(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	one, two := fleet.Spokes()[0], fleet.Spokes()[1]
	pl, _ := testPlugin(t, "")
	provider := clusterprofile.New(clusterprofile.Options{
		Namespace: ns, CredentialPlugins: []clusterprofile.CredentialPlugin{pl}, Safety: onLoopback,
	})
	h, err := sdk.NewHub(provider, sdk.Options{
		RGDs: sdk.RGDOptions{DisableController: true},
		Rollouts: sdk.RolloutOptions{
			Resync: 200 * time.Millisecond,
			Placement: func(graph, _ string, labels map[string]string) bool {
				switch graph {
				case "by-label":
					return labels["tier"] == "prod"
				case "by-property":
					return labels[clusterprofile.PropertyPrefix+"region"] == "eu"
				}
				return false
			},
		},
	})
	require.NoError(t, err)
	fgtesting.Start(t, func(ctx context.Context) error { return h.Run(ctx, fleet.Hub.Config) })

	createProfile(t, ns, "alpha", map[string]string{"tier": "prod", "color": "blue"}, ciav1alpha1.ClusterProfileStatus{
		AccessProviders: []ciav1alpha1.AccessProvider{accessTo(pluginName, one)},
	})
	createProfile(t, ns, "beta", map[string]string{"tier": "dev"}, ciav1alpha1.ClusterProfileStatus{
		Properties: []ciav1alpha1.Property{{Name: "region", Value: "eu"}},
	})
	createKubeconfigSecret(t, ns, "beta", two.Kubeconfig)

	ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
	defer cancel()
	require.NoError(t, h.RegisterGraph(ctx, placedRGD(t, "by-label", "ByLabel")))
	require.NoError(t, h.RegisterGraph(ctx, placedRGD(t, "by-property", "ByProperty")))
	require.NoError(t, h.WaitServable(ctx, "by-label", "alpha"), "placed by the profile's label")
	require.NoError(t, h.WaitServable(ctx, "by-property", "beta"), "placed by the profile's property")
	assert.False(t, crdExists(t, two, "bylabels.kro.run"), "beta has no tier=prod label")
	assert.False(t, crdExists(t, one, "byproperties.kro.run"), "alpha has no region property")

	spokeOne := spokeClient(t, one)
	spokeTwo := spokeClient(t, two)
	createInstance(t, spokeOne, "ByLabel", "shown")
	createInstance(t, spokeTwo, "ByProperty", "shown")
	requireConfigMap(t, spokeOne, "shown-labels", map[string]string{"color": "blue", "region": "none"})
	requireConfigMap(t, spokeTwo, "shown-labels", map[string]string{"color": "none", "region": "eu"})

	start := time.Now()
	updateProfile(t, ns, "alpha", false, func(cp *ciav1alpha1.ClusterProfile) { cp.Labels["color"] = "green" })
	requireConfigMap(t, spokeOne, "shown-labels", map[string]string{"color": "green", "region": "none"})
	took := time.Since(start)
	t.Logf("a relabelled profile reached its graph's child in %v", took)
	assert.Less(t, took, relabelBound, "the provider tells the relabel: no poll is waited for")
}

// relabelBound is how long a relabel may take to reach a child: the
// provider tells the hub at once (tens of milliseconds on a quiet
// machine), and the spoke runtime's poll of the labels, which would
// catch it without the notice, runs every 2 s.
const relabelBound = time.Second

func spokeClient(t *testing.T, c *fgtesting.Cluster) client.Client {
	t.Helper()
	cl, err := client.New(c.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return cl
}

func crdExists(t *testing.T, c *fgtesting.Cluster, name string) bool {
	t.Helper()
	err := spokeClient(t, c).Get(t.Context(), client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

func createInstance(t *testing.T, c client.Client, kind, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kro.run/v1alpha1")
	u.SetKind(kind)
	u.SetNamespace("default")
	u.SetName(name)
	require.EventuallyWithT(t, func(ct *assert.CollectT) { // until discovery lists the kind
		assert.NoError(ct, c.Create(t.Context(), u.DeepCopy()))
	}, wait, tick)
}

func requireConfigMap(t *testing.T, c client.Client, name string, data map[string]string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cm := &corev1.ConfigMap{}
		if assert.NoError(ct, c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, cm)) {
			assert.Equal(ct, data, cm.Data)
		}
	}, wait, 10*time.Millisecond)
}
