//go:build integration

package sdk_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const gadgetRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: gadget
spec:
  schema:
    apiVersion: v1alpha1
    kind: Gadget
    spec:
      color: string | default="red"
  resources:
  - id: widget
    template:
      apiVersion: test.fleetgraph.dev/v1
      kind: Widget
      metadata:
        name: ${schema.metadata.name}
      spec:
        color: ${schema.spec.color}
`

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	gvk := schema.GroupVersionKind{Group: "test.fleetgraph.dev", Version: "v1", Kind: "Widget"}
	return fgtesting.NewCRD(gvk, "widgets", apiextensionsv1.NamespaceScoped)
}

func rgdFromString(t testing.TB, s string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(s), rgd))
	return rgd
}

func crdExists(t *testing.T, c *fgtesting.Cluster, name string) bool {
	t.Helper()
	cl, err := client.New(c.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	err = cl.Get(context.Background(), client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
	require.NoError(t, client.IgnoreNotFound(err))
	return err == nil
}

// A spoke that lacks a kind the graph uses is reported Incompatible and not
// served, and is served as soon as the kind appears.
func TestFanOutWaitsForChildKinds(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 2) // its own: it installs the Widget CRD, one spoke after the other
	require.NoError(t, fleet.Spoke("spoke-1").InstallCRDs(widgetCRD()))
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, h.RegisterGraph(context.Background(), rgdFromString(t, gadgetRGD)))

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := h.FleetStatus("gadget").Clusters
		require.Len(ct, st, 2)
		assert.Equal(ct, "Established", string(st[0].CRD))
		assert.Equal(ct, "Incompatible", string(st[1].CRD))
		assert.Contains(ct, st[1].Message, "test.fleetgraph.dev/v1, Kind=Widget")
	}, wait, tick)
	assert.False(t, crdExists(t, fleet.Spoke("spoke-2"), "gadgets.kro.run"),
		"no CRD goes to a spoke that cannot serve the graph")

	require.NoError(t, fleet.Spoke("spoke-2").InstallCRDs(widgetCRD()))
	c2 := newClient(t, fleet.Spoke("spoke-2").Config)
	gadgetGVK := webAppGVK.GroupVersion().WithKind("Gadget")
	createWhenServed(t, c2, instance(gadgetGVK, "g", map[string]any{"color": "blue"}))
	requireState(t, c2, gadgetGVK, "g", "ACTIVE")
}

// A schema change that would break served instances is refused per cluster
// unless the RGD opts in; an unregistered graph's CRD is deleted only where
// no instance is left, and only when asked.
func TestFanOutGuardsServedSchemas(t *testing.T) {
	t.Parallel()
	fleet := sharedFleet(t)
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, CRDs: sdk.CRDOptions{DeleteOnUnregister: true}})
	ctx := context.Background()
	rgd, gvk := renamedRGD(readRGD(t, "testdata/webapp-rgd.yaml"), "guarded", "GuardedWebApp")
	crd := crdName(gvk)
	require.NoError(t, h.RegisterGraph(ctx, rgd.DeepCopy()))
	c1 := newClient(t, fleet.Spoke("spoke-1").Config)
	createWhenServed(t, c1, instance(gvk, "keep", map[string]any{"name": "keep"}))
	requireState(t, c1, gvk, "keep", "ACTIVE")

	// The fan-out installed the admission policy next to the CRD: a new
	// instance comes back from its create with the finalizer and kinds.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		probe := instance(gvk, "guarded-probe", map[string]any{"name": "guarded-probe"})
		require.NoError(ct, c1.Create(ctx, probe, client.DryRunAll))
		assert.Contains(ct, probe.GetFinalizers(), contract.Finalizer)
		assert.Equal(ct, "v1/ConfigMap,apps/v1/Deployment", probe.GetAnnotations()[contract.AnnotationChildKinds])
	}, wait, tick)

	narrowed := rgd.DeepCopy()
	narrowed.Spec.Schema.Spec.Raw = []byte(`{"name":"string | required=true","replicas":"integer | default=1"}`)
	narrowed.Spec.Resources[0].Template.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${schema.spec.name}-config"}}`)
	narrowed.Spec.Resources[1].Template.Raw = []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"${schema.spec.name}"},` +
		`"spec":{"selector":{"matchLabels":{"app":"${schema.spec.name}"}},"template":{"metadata":{"labels":{"app":"${schema.spec.name}"}},` +
		`"spec":{"containers":[{"name":"web","image":"nginx"}]}}}}`)
	require.NoError(t, h.RegisterGraph(ctx, narrowed))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		for _, c := range h.FleetStatus(rgd.Name).Clusters {
			assert.Equal(ct, "Incompatible", string(c.CRD), c.Cluster)
			assert.Contains(ct, c.Message, "image", "the message names the removed field")
		}
	}, wait, tick)

	narrowed.Annotations = map[string]string{v1alpha1.AnnotationAllowBreakingChanges: "true"}
	require.NoError(t, h.RegisterGraph(ctx, narrowed))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"spoke-1": "Established 1/1", "spoke-2": "Established 0/0"}, clusterStates(h, rgd.Name))
	}, wait, tick)

	require.NoError(t, h.UnregisterGraph(ctx, rgd.Name))
	require.Eventually(t, func() bool {
		return !policyExists(t, fleet.Spoke("spoke-1"), crd) && !policyExists(t, fleet.Spoke("spoke-2"), crd)
	}, wait, tick, "the policy leaves every spoke at once")
	assert.True(t, crdExists(t, fleet.Spoke("spoke-1"), crd), "a CRD with instances left stays")
	assert.True(t, crdExists(t, fleet.Spoke("spoke-2"), crd), "CRDs go once the removal is otherwise done")
	require.NoError(t, c1.Delete(ctx, instance(gvk, "keep", nil)))
	for _, s := range []string{"spoke-1", "spoke-2"} {
		require.Eventually(t, func() bool { return !crdExists(t, fleet.Spoke(s), crd) }, wait, tick,
			"an unused CRD is deleted on request once the last instance is finalized (%s)", s)
	}
	_, err = configMapData(c1, "keep-config")
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "the last instance was finalized: its children are gone")
}

// policyExists reports whether the admission policy of the CRD named crd
// is on the cluster.
func policyExists(t *testing.T, c *fgtesting.Cluster, crd string) bool {
	t.Helper()
	err := newClient(t, c.Config).Get(context.Background(), client.ObjectKey{Name: "fleetgraph." + crd},
		&admissionv1.MutatingAdmissionPolicy{})
	require.NoError(t, client.IgnoreNotFound(err))
	return err == nil
}
