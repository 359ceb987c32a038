package crdschema_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/internal/crdschema"
)

// A schema with a default at every place one can sit: a property, a
// nullable and a non-nullable one, a nested object, list items, and
// additionalProperties.
const defaultsSchema = `
type: object
properties:
  spec:
    type: object
    default: {}
    properties:
      replicas: {type: integer, default: 1}
      image: {type: string, default: nginx}
      note: {type: string, nullable: true, default: none}
      limits:
        type: object
        default: {cpu: "1"}
        properties:
          cpu: {type: string}
          memory: {type: string, default: 1Gi}
      ports:
        type: array
        items:
          type: object
          default: {port: 80}
          properties:
            port: {type: integer, default: 8080}
            protocol: {type: string, default: TCP}
      labels:
        type: object
        additionalProperties:
          type: object
          default: {value: x}
          properties:
            value: {type: string, default: unset}
            weight: {type: integer, default: 5}
`

// Default gives what the API server's own defaulting gives, for objects
// that miss fields, hold nulls where the schema allows them and where it
// does not, and hold values that must be kept.
func TestDefaultIsTheAPIServersDefaulting(t *testing.T) {
	props := &apiextensionsv1.JSONSchemaProps{}
	require.NoError(t, yaml.Unmarshal([]byte(defaultsSchema), props))
	s := crdschema.Structural(&apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props})
	require.NotNil(t, s)

	for name, obj := range map[string]string{
		"empty":             `{}`,
		"spec null":         `{"spec": null}`,
		"kept values":       `{"spec": {"replicas": 3, "image": "busybox", "note": "mine", "limits": {"cpu": "2", "memory": "2Gi"}}}`,
		"nulls":             `{"spec": {"replicas": null, "note": null, "limits": null}}`,
		"list items":        `{"spec": {"ports": [null, {}, {"port": 443}, {"protocol": null}]}}`,
		"additional fields": `{"spec": {"labels": {"a": null, "b": {}, "c": {"value": "v", "weight": null}}}}`,
		"unknown fields":    `{"spec": {"other": {"replicas": null}}, "status": {"x": 1}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var ours, theirs map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(obj), &ours))
			theirs = runtime.DeepCopyJSON(ours)
			crdschema.Default(ours, s)
			structuraldefaulting.Default(theirs, s)
			assert.Equal(t, theirs, ours)
		})
	}

	empty := map[string]any{}
	crdschema.Default(empty, s)
	assert.Equal(t, map[string]any{"spec": map[string]any{
		"replicas": int64(1), "image": "nginx", "note": "none", "limits": map[string]any{"cpu": "1", "memory": "1Gi"},
	}}, empty)
	untouched := map[string]any{"spec": nil}
	crdschema.Default(untouched, nil)
	assert.Equal(t, map[string]any{"spec": nil}, untouched, "a nil schema changes nothing")
}
