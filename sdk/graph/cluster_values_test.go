package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// valuesResources read cluster.values: a key that must be there, one
// with a default, a list, and one tested with has().
func valuesResources() string {
	return "resources:\n" +
		cm("a", "", "replicas: '${string(cluster.values.replicas)}'\n"+
			"bucket: ${cluster.values.?bucket.orValue(\"none\")}\n"+
			"zones: '${cluster.values.?zones.orValue([]).map(z, string(z)).join(\",\")}'\n"+
			"debug: '${string(has(cluster.values.debug) && cluster.values.debug == true)}'") +
		cm("big", "includeWhen: ['${cluster.values.?size.orValue(\"\") == \"big\"}']", "")
}

// cluster.values is a map(string, dyn) the platform fills per cluster: a
// graph reads JSON values of every type, defaults absent keys with the
// optional syntax or has(), and a key it requires that is absent fails
// the evaluation, naming the key.
func TestClusterValuesAreRead(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc("", valuesResources())), graph.Options{})
	require.NoError(t, err)
	assert.Equal(t, graph.ClusterValues, g.UsesCluster(), "reading values is not reading labels")

	ctx := context.Background()
	inst := instance("x", map[string]any{"name": "app"})
	vals := func(values map[string]any) graph.Values {
		return graph.Values{"schema": inst, graph.VarCluster: graph.Cluster{Name: "east", Values: values}.Value()}
	}
	full := vals(map[string]any{"replicas": int64(3), "bucket": "s3://prod", "zones": []any{"a", int64(2)}, "debug": true, "size": "big"})
	obj, err := g.Node("a").Render(ctx, full, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"replicas": "3", "bucket": "s3://prod", "zones": "a,2", "debug": "true"}, obj.Object["data"])
	in, err := g.Node("big").Included(ctx, full)
	require.NoError(t, err)
	assert.True(t, in)

	few := vals(map[string]any{"replicas": 1.5})
	obj, err = g.Node("a").Render(ctx, few, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"replicas": "1.5", "bucket": "none", "zones": "", "debug": "false"}, obj.Object["data"])
	in, err = g.Node("big").Included(ctx, few)
	require.NoError(t, err)
	assert.False(t, in)

	_, err = g.Node("a").Render(ctx, vals(nil), nil)
	require.Error(t, err, "a required key that is absent")
	assert.Contains(t, err.Error(), "replicas")
	_, err = g.Node("a").Render(ctx, graph.Values{"schema": inst}, nil)
	require.Error(t, err, "no cluster in Values: no values either")
}

func TestClusterValuesAreAnExtension(t *testing.T) {
	_, err := graph.Compile(parseRGD(t, rgdDoc("", valuesResources())), graph.Options{Strict: true})
	require.ErrorIs(t, err, graph.ErrExtension)
	assert.Contains(t, err.Error(), `resource "a": data.replicas: the cluster variable: a fleetgraph extension kro does not support (Options.Strict)`)
	assert.Contains(t, err.Error(), `resource "big": includeWhen[0]: the cluster variable`)

	runFailCases(t, map[string]failCase{
		"misspelt values": {resources: "resources:\n" + cm("a", "", "t: ${cluster.valeus.tier}"), kind: graph.ErrExpression,
			want: `resource "a": data.t: ${cluster.valeus.tier}: undefined field 'valeus'`},
	})
}

// A runtime binds what the platform gives a graph on a cluster as
// cluster.values; a key some clusters lack is read with a default.
func ExampleCluster_Value() {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: web}
spec:
  schema: {apiVersion: v1alpha1, kind: Web}
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: web}
      data:
        bucket: ${cluster.values.?bucket.orValue("s3://default")}
`), rgd); err != nil {
		panic(err)
	}
	g, err := graph.Compile(rgd, graph.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(g.UsesCluster() == graph.ClusterValues)
	for _, values := range []map[string]any{{"bucket": "s3://prod"}, nil} {
		vals := graph.Values{
			"schema":         map[string]any{"metadata": map[string]any{"name": "x"}},
			graph.VarCluster: graph.Cluster{Name: "eu-1", Values: values}.Value(),
		}
		obj, err := g.Node("config").Render(context.Background(), vals, nil)
		if err != nil {
			panic(err)
		}
		fmt.Println(obj.Object["data"])
	}
	// Output:
	// true
	// map[bucket:s3://prod]
	// map[bucket:s3://default]
}
