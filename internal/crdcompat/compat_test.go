package crdcompat

import (
	"testing"

	"github.com/stretchr/testify/assert"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func crd(scope apiextensionsv1.ResourceScope, spec apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{}
	c.Spec.Scope = scope
	c.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{
		Name: "v1", Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
		}},
	}}
	return c
}

func TestBreaksNamesEveryBreakWithItsPath(t *testing.T) {
	old := crd(apiextensionsv1.NamespaceScoped, apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"port":      {Type: "integer"},
		"weird key": {Type: "string"},
		"size":      {Type: "integer", Maximum: ptr.To(10.0)},
	}})
	new := crd(apiextensionsv1.ClusterScoped, apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"port": {Type: "string"},
		"size": {Type: "integer", Maximum: ptr.To(5.0)},
	}})
	assert.Equal(t, []string{
		"scope changed from Namespaced to Cluster",
		"v1: spec.port: type changed from integer to string",
		"v1: spec.size: maximum lowered from 10 to 5",
		`v1: spec["weird key"]: removed`,
	}, Breaks(old, new))
	assert.Equal(t, "breaking schema change: a; b", Message([]string{"a", "b"}))
}

func TestBreaksOfNothingIsNothing(t *testing.T) {
	c := crd(apiextensionsv1.NamespaceScoped, apiextensionsv1.JSONSchemaProps{Type: "object"})
	assert.Empty(t, Breaks(nil, c))
	assert.Empty(t, Breaks(c, nil))
	assert.Empty(t, Breaks(c, c))
}
