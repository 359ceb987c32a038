//go:build integration

package sdk_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var gizmoGVK = schema.GroupVersionKind{Group: "test.fleetgraph.dev", Version: "v1", Kind: "Gizmo"}

// gizmoCRD is a child kind whose spec.size has the given type: the hub and
// spoke-1 serve it as an integer, spoke-2 as a string.
func gizmoCRD(sizeType string) *apiextensionsv1.CustomResourceDefinition {
	crd := fgtesting.NewCRD(gizmoGVK, "gizmos", apiextensionsv1.NamespaceScoped)
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema = &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"label": {Type: "string"},
				"size":  {Type: sizeType},
			}},
		},
	}
	return crd
}

// gizmoRGD's version 1 sets only the label, which every cluster types
// alike; version 2 also sets size from an integer.
func gizmoRGD(t *testing.T, generation int64) string {
	t.Helper()
	doc := `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: gizmo-app
spec:
  schema:
    apiVersion: v1alpha1
    kind: GizmoApp
    spec:
      size: integer | default=3
  resources:
  - id: gizmo
    template:
      apiVersion: test.fleetgraph.dev/v1
      kind: Gizmo
      metadata:
        name: ${schema.metadata.name}
      spec:
        label: ${schema.metadata.name}
`
	if generation > 1 {
		doc += "        size: ${schema.spec.size}\n"
	}
	return doc
}

// A spoke whose schema of a child kind does not type-check the graph as the
// hub's does is reported Incompatible, naming the spoke, kind and field,
// with an event on the RGD; it keeps serving the version it served, while
// the spoke that agrees takes the new one.
func TestFanOutChecksSpokeSchemas(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 2) // its own: its spokes serve Gizmo with different schemas, and the RGD controller runs
	require.NoError(t, fleet.Hub.InstallCRDs(gizmoCRD("integer")))
	require.NoError(t, fleet.Spoke("spoke-1").InstallCRDs(gizmoCRD("integer")))
	require.NoError(t, fleet.Spoke("spoke-2").InstallCRDs(gizmoCRD("string")))
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
	ctx := context.Background()
	hubClient := newClient(t, fleet.Hub.Config)

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(hubClient.Create(ctx, rgdFromString(t, gizmoRGD(t, 1)))))
	}, wait, tick, "the hub installs the RGD CRD")
	appGVK := webAppGVK.GroupVersion().WithKind("GizmoApp")
	c2 := newClient(t, fleet.Spoke("spoke-2").Config)
	createWhenServed(t, c2, instance(appGVK, "old", map[string]any{}))
	requireState(t, c2, appGVK, "old", "ACTIVE")

	// The hub writes the RGD too (its finalizer, its status): an update
	// that lost that race is retried on the object as it is now.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		if err := hubClient.Get(ctx, client.ObjectKey{Name: "gizmo-app"}, rgd); err != nil {
			return err
		}
		rgd.Spec = rgdFromString(t, gizmoRGD(t, 2)).Spec
		return hubClient.Update(ctx, rgd)
	}))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := h.FleetStatus("gizmo-app").Clusters
		require.Len(ct, st, 2)
		assert.Equal(ct, "Established", string(st[0].CRD))
		assert.EqualValues(ct, 2, st[0].ServedGeneration)
		assert.Equal(ct, "Incompatible", string(st[1].CRD))
		assert.Contains(ct, st[1].Message, `cluster "spoke-2"`)
		assert.Contains(ct, st[1].Message, "kind test.fleetgraph.dev/v1, Kind=Gizmo")
		assert.Contains(ct, st[1].Message, `resource "gizmo": spec.size: ${schema.spec.size}: expression returns int but the field is string`)
		assert.True(ct, st[1].Serving)
		assert.EqualValues(ct, 1, st[1].ServedGeneration, "spoke-2 keeps the version it served")
	}, wait, tick)

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		events := &eventsv1.EventList{}
		require.NoError(ct, hubClient.List(ctx, events))
		assert.True(ct, hasEvent(events, "gizmo-app", "CRDIncompatible"), "an event on the RGD names the spoke")
	}, wait, tick)

	// spoke-2 still serves version 1: a new instance gets a Gizmo without
	// size; spoke-1 serves version 2.
	createWhenServed(t, c2, instance(appGVK, "new", map[string]any{}))
	requireState(t, c2, appGVK, "new", "ACTIVE")
	assert.NotContains(t, gizmoSpec(t, c2, "new"), "size")
	c1 := newClient(t, fleet.Spoke("spoke-1").Config)
	createWhenServed(t, c1, instance(appGVK, "one", map[string]any{}))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.EqualValues(ct, 3, gizmoSpec(t, c1, "one")["size"])
	}, wait, tick)
}

func gizmoSpec(t *testing.T, c client.Client, name string) map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gizmoGVK)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u); err != nil {
		return map[string]any{"error": err.Error()}
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	return spec
}
