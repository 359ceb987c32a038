package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

var gizmoGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gizmo"}

// gizmoSchema is a Gizmo kind whose spec.size has the given OpenAPI type.
func gizmoSchema(sizeType string) *spec.Schema {
	obj := func(props map[string]spec.Schema) spec.Schema {
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}, Properties: props}}
	}
	str := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}}}
	s := obj(map[string]spec.Schema{
		"apiVersion": str, "kind": str,
		"metadata": obj(map[string]spec.Schema{"name": str}),
		"spec":     obj(map[string]spec.Schema{"size": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{sizeType}}}}),
	})
	return &s
}

const gizmoResources = `resources:
- id: gizmo
  template:
    apiVersion: example.com/v1
    kind: Gizmo
    metadata: {name: g}
    spec:
      size: ${schema.spec.replicas}
`

func TestCheckSchemasAgainstAnotherClustersSchemas(t *testing.T) {
	hub := graph.StaticResolver{gizmoGVK: gizmoSchema("integer")}
	g, err := graph.Compile(parseRGD(t, rgdDoc("", gizmoResources)), graph.Options{Resolver: hub})
	require.NoError(t, err)
	require.True(t, g.TypeChecked())

	assert.NoError(t, g.CheckSchemas(graph.StaticResolver{gizmoGVK: gizmoSchema("integer")}), "the same schema agrees")
	assert.NoError(t, g.CheckSchemas(graph.StaticResolver{}), "a kind the other cluster does not describe is dyn")

	err = g.CheckSchemas(graph.StaticResolver{gizmoGVK: gizmoSchema("string")})
	require.ErrorIs(t, err, graph.ErrType)
	assert.Contains(t, err.Error(), `resource "gizmo": spec.size: ${schema.spec.replicas}: expression returns int but the field is string`)
}

func TestCheckSchemasSkipsAnUntypedGraph(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc("", gizmoResources)), graph.Options{})
	require.NoError(t, err)
	assert.False(t, g.TypeChecked())
	assert.NoError(t, g.CheckSchemas(graph.StaticResolver{gizmoGVK: gizmoSchema("string")}))
}
