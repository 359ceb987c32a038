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

const clusterVarSchema = `apiVersion: v1alpha1
kind: App
spec:
  name: string | default="app"
status:
  servedBy: ${cluster.name}
  tier: ${cluster.labels.?tier.orValue("none")}
  conditions:
  - "${runtime.newCondition({type: 'Placed', status: 'True', reason: 'On', message: cluster.name})}"`

// clusterResources read cluster in a template, includeWhen, readyWhen
// and forEach.
func clusterResources() string {
	return "resources:\n" +
		cm("a", "readyWhen: ['${cluster.name != \"\" || a.metadata.name == \"a\"}']",
			"replicas: '${string(cluster.labels.tier == \"prod\" ? 3 : 1)}'\nwhere: ${cluster.name}") +
		cm("gpu", "includeWhen: ['${cluster.labels.?gpu.orValue(\"\") == \"true\"}']", "") +
		`- id: perZone
  forEach:
  - zone: ${cluster.labels.?zones.orValue("").split(",")}
  template:
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: ${"z-" + zone}
`
}

func TestClusterVariableIsTypedAndEvaluated(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc(clusterVarSchema, clusterResources())), graph.Options{})
	require.NoError(t, err)
	assert.Equal(t, graph.ClusterName|graph.ClusterLabels, g.UsesCluster())

	ctx := context.Background()
	inst := instance("x", map[string]any{"name": "app"})
	prod := graph.Values{"schema": inst, graph.VarCluster: graph.ClusterValue("east", map[string]string{"tier": "prod", "gpu": "true", "zones": "a,b"})}
	dev := graph.Values{"schema": inst, graph.VarCluster: graph.ClusterValue("west", map[string]string{"tier": "dev"})}

	obj, err := g.Node("a").Render(ctx, prod, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"replicas": "3", "where": "east"}, obj.Object["data"])
	obj, err = g.Node("a").Render(ctx, dev, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"replicas": "1", "where": "west"}, obj.Object["data"])

	in, err := g.Node("gpu").Included(ctx, prod)
	require.NoError(t, err)
	assert.True(t, in)
	in, err = g.Node("gpu").Included(ctx, dev)
	require.NoError(t, err)
	assert.False(t, in)

	its, err := g.Node("perZone").Iterations(ctx, prod)
	require.NoError(t, err)
	assert.Equal(t, []map[string]any{{"zone": "a"}, {"zone": "b"}}, its)

	ready, err := g.Node("a").Ready(ctx, dev, map[string]any{"metadata": map[string]any{"name": "other"}})
	require.NoError(t, err)
	assert.True(t, ready, "readyWhen reads cluster.name")

	st, err := g.Status(ctx, dev)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"servedBy": "west", "tier": "dev"}, st)

	conds, _, err := g.Conditions(ctx, dev)
	require.NoError(t, err)
	require.Len(t, conds, 1)
	assert.Equal(t, "west", conds[0]["message"])

	// Without a cluster in Values: the cluster named "" with no labels,
	// as in single-cluster mode.
	st, err = g.Status(ctx, graph.Values{"schema": inst})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"servedBy": "", "tier": "none"}, st)
}

func TestClusterVariableIsAnExtension(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc(clusterVarSchema, clusterResources())), graph.Options{})
	require.NoError(t, err)
	got := make([]string, len(g.Extensions))
	for i, e := range g.Extensions {
		got[i] = e.String()
	}
	assert.Equal(t, []string{
		`resource "a": data.replicas: the cluster variable`,
		`resource "a": data.where: the cluster variable`,
		`resource "a": readyWhen[0]: the cluster variable`,
		`resource "gpu": includeWhen[0]: the cluster variable`,
		`resource "perZone": forEach[0].zone: the cluster variable`,
		`spec.schema.status.conditions[0]: the cluster variable`,
		`spec.schema.status.servedBy: the cluster variable`,
		`spec.schema.status.tier: the cluster variable`,
	}, got)

	_, err = graph.Compile(parseRGD(t, rgdDoc(clusterVarSchema, clusterResources())), graph.Options{Strict: true})
	require.ErrorIs(t, err, graph.ErrExtension)
	for _, want := range []string{
		`resource "a": data.replicas: the cluster variable: a fleetgraph extension kro does not support (Options.Strict)`,
		`resource "gpu": includeWhen[0]: the cluster variable`,
		`resource "perZone": forEach[0].zone: the cluster variable`,
		`spec.schema.status.servedBy: the cluster variable`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestClusterVariableMisspelt(t *testing.T) {
	runFailCases(t, map[string]failCase{
		"misspelt field": {resources: "resources:\n" + cm("a", "", "t: ${cluster.lables.tier}"), kind: graph.ErrExpression,
			want: `resource "a": data.t: ${cluster.lables.tier}: undefined field 'lables'`},
		"labels are strings": {resources: "resources:\n" + cm("a", "", "t: ${string(cluster.labels.tier + 1)}"), kind: graph.ErrExpression,
			want: `resource "a": data.t: ${string(cluster.labels.tier + 1)}: found no matching overload for '_+_' applied to '(string, int)'`},
		"includeWhen": {resources: "resources:\n" + cm("a", "includeWhen: ['${cluster.nam == \"x\"}']", ""), kind: graph.ErrExpression,
			want: `resource "a": includeWhen[0]: ${cluster.nam == "x"}: undefined field 'nam'`},
	})
}

// kro v0.9.4 does not reserve cluster: an RGD that names a resource or
// an iterator cluster keeps kro's meaning, and is no extension.
func TestClusterNamedResourceStaysKros(t *testing.T) {
	res := "resources:\n" + cm("cluster", "", "x: one") + cm("b", "", "v: ${cluster.data.x}")
	g, err := graph.Compile(parseRGD(t, rgdDoc("", res)), graph.Options{Strict: true})
	require.NoError(t, err)
	assert.Zero(t, g.UsesCluster())
	assert.Equal(t, []string{"cluster"}, g.Node("b").Dependencies)
	g, err = graph.Compile(parseRGD(t, rgdDoc("", res)), graph.Options{})
	require.NoError(t, err)
	assert.Empty(t, g.Extensions)

	ctx := context.Background()
	vals := graph.Values{"schema": instance("x", map[string]any{})}
	_, err = g.Node("b").Render(ctx, vals, nil)
	require.ErrorIs(t, err, graph.ErrPending, "the resource cluster is waited for, not replaced by the variable")
	vals["cluster"] = map[string]any{"data": map[string]any{"x": "one"}}
	obj, err := g.Node("b").Render(ctx, vals, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"v": "one"}, obj.Object["data"])

	iter := "resources:\n- id: a\n  forEach:\n  - cluster: ${schema.spec.regions}\n  template:\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: ${cluster}\n"
	g, err = graph.Compile(parseRGD(t, rgdDoc("", iter)), graph.Options{Strict: true})
	require.NoError(t, err)
	assert.Zero(t, g.UsesCluster())
}

func TestClusterUse(t *testing.T) {
	for name, tt := range map[string]struct {
		expr string
		want graph.ClusterUse
	}{
		"none":                 {`${schema.spec.name}`, 0},
		"name":                 {`${cluster.name}`, graph.ClusterName},
		"labels":               {`${cluster.labels.tier}`, graph.ClusterLabels},
		"whole":                {`${[cluster][0].name}`, graph.ClusterLabels | graph.ClusterValues},
		"values":               {`${string(cluster.values.replicas)}`, graph.ClusterValues},
		"has values":           {`${string(has(cluster.values.replicas))}`, graph.ClusterValues},
		"labels and values":    {`${cluster.labels.tier + string(cluster.values.?n.orValue(1))}`, graph.ClusterLabels | graph.ClusterValues},
		"shadowed by map":      {`${["a"].map(cluster, cluster + "x").join()}`, 0},
		"shadowed by bind":     {`${cel.bind(cluster, "a", cluster)}`, 0},
		"free beside a shadow": {`${["a"].map(c, cluster.name + c).join()}`, graph.ClusterName},
	} {
		t.Run(name, func(t *testing.T) {
			g, err := graph.Compile(parseRGD(t, rgdDoc("", "resources:\n"+cm("a", "", "x: "+tt.expr))), graph.Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, g.UsesCluster())
			if tt.want == 0 {
				assert.Empty(t, g.Extensions)
			}
		})
	}
}

// A graph that does not read cluster is untouched by it.
func TestGraphsWithoutClusterDoNotUseIt(t *testing.T) {
	for _, name := range []string{"webapp", "kro-cel-functions", "database", "external-refs"} {
		g := compileFile(t, name, graph.Options{})
		assert.Zero(t, g.UsesCluster(), name)
	}
}

// A graph reads the cluster it is served on; the runtime binds it with
// ClusterValue when UsesCluster says the graph reads it.
func ExampleClusterValue() {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: tiered}
spec:
  schema: {apiVersion: v1alpha1, kind: Tiered}
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: tiered}
      data:
        replicas: '${string(cluster.labels.?tier.orValue("") == "prod" ? 3 : 1)}'
`), rgd); err != nil {
		panic(err)
	}
	g, err := graph.Compile(rgd, graph.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(g.UsesCluster()&graph.ClusterLabels != 0, g.Extensions[0])
	for _, tier := range []string{"prod", "dev"} {
		vals := graph.Values{
			"schema":         map[string]any{"metadata": map[string]any{"name": "x"}},
			graph.VarCluster: graph.ClusterValue("eu-1", map[string]string{"tier": tier}),
		}
		obj, err := g.Node("config").Render(context.Background(), vals, nil)
		if err != nil {
			panic(err)
		}
		fmt.Println(tier, obj.Object["data"])
	}
	// Output:
	// true resource "config": data.replicas: the cluster variable
	// prod map[replicas:3]
	// dev map[replicas:1]
}
