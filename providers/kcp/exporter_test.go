package kcp

import (
	"regexp"
	"testing"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/crdcompat"
)

func settingsGraph(props map[string]apiextensionsv1.JSONSchemaProps) hub.Graph {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "settings.kro.run"
	crd.Spec.Group, crd.Spec.Scope = "kro.run", apiextensionsv1.NamespaceScoped
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "settings", Singular: "settings", Kind: "Settings", ListKind: "SettingsList"}
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{
		Name: "v1alpha1", Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: props},
			},
		}},
	}}
	return hub.Graph{Name: "settings", CRD: crd}
}

// A schema is named after its content: the same CRD always gives the same
// name, a changed one a new name, so schemas never need an update.
func TestSchemaForNamesTheSchemaAfterItsContent(t *testing.T) {
	color := map[string]apiextensionsv1.JSONSchemaProps{"color": {Type: "string"}}
	a, err := schemaFor(settingsGraph(color))
	require.NoError(t, err)
	again, err := schemaFor(settingsGraph(color))
	require.NoError(t, err)
	changed, err := schemaFor(settingsGraph(map[string]apiextensionsv1.JSONSchemaProps{"color": {Type: "string"}, "size": {Type: "integer"}}))
	require.NoError(t, err)

	assert.Regexp(t, regexp.MustCompile(`^v[0-9a-f]{10}\.settings\.kro\.run$`), a.Name)
	assert.Equal(t, a.Name, again.Name)
	assert.NotEqual(t, a.Name, changed.Name)
	assert.Equal(t, "fleetgraph", a.Labels["app.kubernetes.io/managed-by"])
	assert.Equal(t, "APIResourceSchema", a.Kind)

	// Back to a CRD for the compatibility check, nothing is lost.
	crd, err := schemaCRD(a)
	require.NoError(t, err)
	assert.Empty(t, crdcompat.Breaks(crd, settingsGraph(color).CRD))
	assert.NotEmpty(t, crdcompat.Breaks(crd, settingsGraph(map[string]apiextensionsv1.JSONSchemaProps{"color": {Type: "integer"}}).CRD))
}

// The export lists one schema per resource, switched in place, and keeps
// the claims it has while adding new ones.
func TestExportListsTheSchemaAndAddsClaims(t *testing.T) {
	export := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"permissionClaims": []any{map[string]any{"group": "", "resource": "secrets", "verbs": []any{"get"}}},
	}}}
	gr := schema.GroupResource{Group: "kro.run", Resource: "settings"}
	pub := publication{Schema: "v1.settings.kro.run", Resource: gr,
		Claims: []schema.GroupResource{{Resource: "configmaps"}, {Resource: "secrets"}}}

	assert.Empty(t, listedSchema(export, gr))
	assert.True(t, setResource(export, pub))
	assert.False(t, setResource(export, pub), "listing the same schema again changes nothing")
	pub.Schema = "v2.settings.kro.run"
	assert.True(t, setResource(export, pub))
	assert.Equal(t, "v2.settings.kro.run", listedSchema(export, gr))
	resources, _, _ := unstructured.NestedSlice(export.Object, "spec", "resources")
	assert.Len(t, resources, 1)

	assert.True(t, addClaims(export, pub.Claims))
	assert.False(t, addClaims(export, pub.Claims))
	claims, _, _ := unstructured.NestedSlice(export.Object, "spec", "permissionClaims")
	require.Len(t, claims, 2)
	assert.Equal(t, "configmaps", claims[1].(map[string]any)["resource"])
	assert.Len(t, claims[1].(map[string]any)["verbs"], len(ClaimVerbs))
}

// A binding serves a graph only once it accepts every claim and is bound
// to the published schema; a refused claim is named.
func TestBindingChecks(t *testing.T) {
	pub := publication{Schema: "v2.settings.kro.run", Resource: schema.GroupResource{Group: "kro.run", Resource: "settings"},
		Claims: []schema.GroupResource{{Resource: "configmaps"}}}
	b := &apisv1alpha1.APIBinding{}
	b.Name = "platform"

	err := acceptsClaims(b, pub.Claims)
	assert.ErrorIs(t, err, ErrClaimsNotAccepted)
	assert.ErrorIs(t, err, hub.ErrIncompatible, "the cluster is reported Incompatible")
	assert.Contains(t, err.Error(), "APIBinding platform does not accept configmaps (core)")

	claim := apisv1alpha1.AcceptablePermissionClaim{State: apisv1alpha1.ClaimAccepted}
	claim.Resource = "configmaps"
	b.Spec.PermissionClaims = []apisv1alpha1.AcceptablePermissionClaim{claim}
	assert.NoError(t, acceptsClaims(b, pub.Claims))

	err = boundTo(b, pub)
	assert.ErrorIs(t, err, hub.ErrNotServedYet, "the cluster is reported Applied")
	bound := apisv1alpha1.BoundAPIResource{Group: "kro.run", Resource: "settings"}
	bound.Schema.Name = "v1.settings.kro.run"
	b.Status.BoundResources = []apisv1alpha1.BoundAPIResource{bound}
	assert.ErrorContains(t, boundTo(b, pub), "serves settings.kro.run as v1.settings.kro.run, not v2")
	b.Status.BoundResources[0].Schema.Name = pub.Schema
	assert.NoError(t, boundTo(b, pub))
}
