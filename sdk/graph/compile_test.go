package graph_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

func TestEveryTestdataRGDCompiles(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 8)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			g := compileFile(t, name, graph.Options{})
			assert.Equal(t, len(loadRGD(t, name).Spec.Resources), len(g.Nodes))
			assert.Equal(t, graph.ManagedBy, g.CRD.Labels[graph.LabelManagedBy])
		})
	}
}

func TestCompileWebAppOrdersByDependencies(t *testing.T) {
	g := compileFile(t, "webapp", graph.Options{})

	assert.Equal(t, "webapp", g.Name)
	assert.Equal(t, schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "WebApp"}, g.Instance.GVK)
	assert.Equal(t, "webapps", g.Instance.Plural)
	assert.True(t, g.Instance.Namespaced)
	assert.Equal(t, []string{"configmap", "deployment", "service"}, ids(g.Nodes))
	assert.Equal(t, [][]string{{"configmap"}, {"deployment"}, {"service"}}, levelIDs(g.Levels))
	assert.Equal(t, [][]string{{"service"}, {"deployment"}, {"configmap"}}, levelIDs(g.DeletionWaves))
	assert.Equal(t, []string{"configmap"}, g.Node("deployment").Dependencies)
	assert.Equal(t, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, g.Node("deployment").GVK)
	assert.Nil(t, g.Node("nope"))
}

func TestRenderWebAppWaitsForDependencies(t *testing.T) {
	g := compileFile(t, "webapp", graph.Options{})
	vals := graph.Values{"schema": instance("demo", map[string]any{"name": "demo", "image": "nginx:1.27", "replicas": int64(3), "port": int64(8080)})}

	cm, err := g.Node("configmap").Render(context.Background(), vals, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "demo-config"},
		"data":     map[string]any{"name": "demo", "image": "nginx:1.27", "replicas": "3", "port": "8080"},
	}, cm.Object)

	_, err = g.Node("deployment").Render(context.Background(), vals, nil)
	require.ErrorIs(t, err, graph.ErrPending)
	var ge *graph.Error
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, "deployment", ge.ResourceID)
	assert.Equal(t, "${configmap.metadata.name}", ge.Expression)

	vals["configmap"] = cm.Object
	dep, err := g.Node("deployment").Render(context.Background(), vals, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(3), dep.Object["spec"].(map[string]any)["replicas"], "a lone expression keeps its integer type")
	container := dep.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, []any{map[string]any{"name": "CONFIG_MAP_NAME", "value": "demo-config"}}, container["env"])

	vals["deployment"] = dep.Object
	svc, err := g.Node("service").Render(context.Background(), vals, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"app": "demo"}, svc.Object["spec"].(map[string]any)["selector"])

	// Rendering twice gives independent objects.
	again, err := g.Node("service").Render(context.Background(), vals, nil)
	require.NoError(t, err)
	again.Object["spec"].(map[string]any)["selector"].(map[string]any)["app"] = "changed"
	assert.Equal(t, "demo", svc.Object["spec"].(map[string]any)["selector"].(map[string]any)["app"])
	assert.Equal(t, "demo", vals["deployment"].(map[string]any)["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)["app"])
}

func TestStatusOmitsFieldsThatWait(t *testing.T) {
	g := compileFile(t, "webapp", graph.Options{})
	vals := graph.Values{"schema": instance("demo", map[string]any{"name": "demo"})}

	st, err := g.Status(context.Background(), vals)
	require.NoError(t, err)
	assert.Empty(t, st)

	vals["deployment"] = map[string]any{"metadata": map[string]any{"name": "demo"}}
	st, err = g.Status(context.Background(), vals)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"deploymentName": "demo"}, st)
}

func TestStatusProjectionsOfSeveralTypes(t *testing.T) {
	g := compileFile(t, "status-projections", graph.Options{})
	props := g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties
	assert.Equal(t, "integer", props["replicas"].Type)
	assert.Equal(t, "number", props["ratio"].Type)
	assert.Equal(t, "boolean", props["enabled"].Type)
	assert.Equal(t, "array", props["ports"].Type)
	assert.Equal(t, "integer", props["ports"].Items.Schema.Type)
	assert.Equal(t, "string", props["summary"].Type)
	assert.Equal(t, "object", props["nested"].Type)
	assert.Contains(t, props, "state")
	assert.Contains(t, props, "conditions")

	vals := graph.Values{
		"schema":     instance("r", map[string]any{"replicas": int64(2), "ratio": 0.25}),
		"deployment": map[string]any{"metadata": map[string]any{"name": "r", "generation": int64(4), "labels": map[string]any{"app": "r"}}},
		"config":     map[string]any{"data": map[string]any{"replicas": "2"}},
	}
	st, err := g.Status(context.Background(), vals)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"name": "r", "replicas": int64(2), "ratio": 0.5, "enabled": true,
		"labels": map[string]any{"app": "r"}, "ports": []any{int64(80), int64(443)},
		"summary": "r has 2 replicas",
		"nested":  map[string]any{"generation": int64(4), "config": map[string]any{"replicas": "2"}},
	}, st)
}

func TestForEachExpandsTheCartesianProduct(t *testing.T) {
	g := compileFile(t, "worker-pool", graph.Options{})
	workers := g.Node("workers")
	require.True(t, workers.Collection)
	assert.Equal(t, []string{"settings"}, workers.Dependencies)

	vals := graph.Values{"schema": instance("pool", map[string]any{
		"image": "busybox", "regions": []any{"eu", "us"}, "tiers": []any{"gold", "silver"},
	})}
	its, err := workers.Iterations(context.Background(), vals)
	require.NoError(t, err)
	assert.Equal(t, []map[string]any{
		{"region": "eu", "tier": "gold"}, {"region": "eu", "tier": "silver"},
		{"region": "us", "tier": "gold"}, {"region": "us", "tier": "silver"},
	}, its)

	vals["settings"] = map[string]any{"metadata": map[string]any{"name": "pool-settings"}}
	obj, err := workers.Render(context.Background(), vals, its[3])
	require.NoError(t, err)
	assert.Equal(t, "pool-us-silver", obj.GetName())
	assert.Equal(t, map[string]string{"region": "us", "tier": "silver"}, obj.GetLabels())

	_, err = workers.Render(context.Background(), vals, nil)
	require.ErrorIs(t, err, graph.ErrInvalid, "a collection needs its iteration")

	one, err := g.Node("settings").Iterations(context.Background(), vals)
	require.NoError(t, err)
	assert.Equal(t, []map[string]any{{}}, one, "a plain resource has one empty iteration")

	vals["workers"] = []any{obj.Object, obj.Object}
	st, err := g.Status(context.Background(), vals)
	require.NoError(t, err)
	assert.Equal(t, int64(2), st["workers"])
	assert.Equal(t, []any{"pool-us-silver", "pool-us-silver"}, st["names"])
}

func TestForEachRefusesMoreThanMaxIterations(t *testing.T) {
	g := compileFile(t, "worker-pool", graph.Options{})
	regions := make([]any, 101)
	tiers := make([]any, 10)
	for i := range regions {
		regions[i] = "r"
	}
	for i := range tiers {
		tiers[i] = "t"
	}
	vals := graph.Values{"schema": instance("pool", map[string]any{"regions": regions, "tiers": tiers})}
	_, err := g.Node("workers").Iterations(context.Background(), vals)
	require.ErrorIs(t, err, graph.ErrTooManyIterations)

	vals = graph.Values{"schema": instance("pool", map[string]any{"regions": []any{}, "tiers": tiers})}
	its, err := g.Node("workers").Iterations(context.Background(), vals)
	require.NoError(t, err)
	assert.Empty(t, its)
}

func TestReadyWhenBindsTheObservedObject(t *testing.T) {
	g := compileFile(t, "worker-pool", graph.Options{})
	workers := g.Node("workers")
	vals := graph.Values{}

	ready, err := workers.Ready(context.Background(), vals, map[string]any{"status": map[string]any{"readyReplicas": int64(1)}})
	require.NoError(t, err)
	assert.True(t, ready)
	ready, err = workers.Ready(context.Background(), vals, map[string]any{"status": map[string]any{}})
	require.NoError(t, err)
	assert.False(t, ready)
	ready, err = workers.Ready(context.Background(), vals, map[string]any{"metadata": map[string]any{"name": "w"}})
	require.NoError(t, err)
	assert.False(t, ready, "no status yet: not ready, not an error")

	plain, err := g.Node("settings").Ready(context.Background(), vals, map[string]any{})
	require.NoError(t, err)
	assert.True(t, plain, "no readyWhen: ready once it exists")

	db := compileFile(t, "database", graph.Options{})
	sts := db.Node("statefulSet")
	ready, err = sts.Ready(context.Background(), vals, map[string]any{"spec": map[string]any{"replicas": int64(2)}})
	require.NoError(t, err)
	assert.False(t, ready, "a missing status field means not ready yet")
	ready, err = sts.Ready(context.Background(), vals, map[string]any{"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"readyReplicas": int64(2)}})
	require.NoError(t, err)
	assert.True(t, ready)
}

func TestIncludeWhenToggles(t *testing.T) {
	g := compileFile(t, "feature-toggles", graph.Options{})
	spec := map[string]any{"name": "app", "monitoring": false, "networkPolicy": map[string]any{"enabled": true, "allowFrom": []any{"ops"}}}
	vals := graph.Values{"schema": instance("app", spec)}

	in, err := g.Node("metrics").Included(context.Background(), vals)
	require.NoError(t, err)
	assert.False(t, in)
	in, err = g.Node("policy").Included(context.Background(), vals)
	require.NoError(t, err)
	assert.True(t, in)
	in, err = g.Node("app").Included(context.Background(), vals)
	require.NoError(t, err)
	assert.True(t, in)

	spec["monitoring"] = true
	spec["networkPolicy"] = map[string]any{"enabled": true}
	in, err = g.Node("metrics").Included(context.Background(), vals)
	require.NoError(t, err)
	assert.True(t, in)
	in, err = g.Node("policy").Included(context.Background(), vals)
	require.NoError(t, err)
	assert.False(t, in, "every includeWhen condition must hold")

	vals["app"] = map[string]any{"metadata": map[string]any{"name": "app"}}
	spec["networkPolicy"] = map[string]any{"enabled": true, "allowFrom": []any{"ops", "dev"}}
	pol, err := g.Node("policy").Render(context.Background(), vals, nil)
	require.NoError(t, err)
	from := pol.Object["spec"].(map[string]any)["ingress"].([]any)[0].(map[string]any)["from"].([]any)
	assert.Len(t, from, 2)
	assert.Equal(t, map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "dev"}}}, from[1])
}

func TestExternalRefByNameAndSelector(t *testing.T) {
	g := compileFile(t, "external-refs", graph.Options{})
	shared, peers := g.Node("shared"), g.Node("peers")
	assert.True(t, shared.External)
	assert.False(t, shared.Collection)
	assert.True(t, peers.External)
	assert.True(t, peers.Collection, "a selector reads a list")
	assert.Equal(t, []string{"peers", "shared"}, g.Node("summary").Dependencies)
	assert.Equal(t, [][]string{{"shared", "peers"}, {"summary"}}, levelIDs(g.Levels))

	vals := graph.Values{"schema": instance("c", map[string]any{"sharedConfig": "defaults", "team": "blue"})}
	ref, err := shared.Ref(context.Background(), vals)
	require.NoError(t, err)
	assert.Equal(t, graph.ExternalRef{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "platform", Name: "defaults"}, ref)

	ref, err = peers.Ref(context.Background(), vals)
	require.NoError(t, err)
	assert.Empty(t, ref.Name)
	require.NotNil(t, ref.Selector)
	assert.Equal(t, map[string]string{"team": "blue"}, ref.Selector.MatchLabels)
	assert.Equal(t, []string{"backend", "frontend"}, ref.Selector.MatchExpressions[0].Values)

	_, err = shared.Render(context.Background(), vals, nil)
	require.ErrorIs(t, err, graph.ErrInvalid)

	vals["shared"] = map[string]any{"data": map[string]any{"logLevel": "debug"}}
	vals["peers"] = []any{
		map[string]any{"metadata": map[string]any{"name": "a"}},
		map[string]any{"metadata": map[string]any{"name": "b"}},
	}
	sum, err := g.Node("summary").Render(context.Background(), vals, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"logLevel": "debug", "peers": "a,b"}, sum.Object["data"])
	st, err := g.Status(context.Background(), vals)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"peers": int64(2), "logLevel": "debug"}, st)
}

func TestOptionalResultsOmitFields(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: opt}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Opt
    spec:
      labels: "map[string]string"
  resources:
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: x
        labels: ${schema.spec.?labels}
`), graph.Options{})
	require.NoError(t, err)
	obj, err := g.Node("cm").Render(context.Background(), graph.Values{"schema": instance("x", map[string]any{})}, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "x"}, obj.Object["metadata"])
}

func TestCompileReturnsEveryProblem(t *testing.T) {
	_, err := graph.Compile(parseRGD(t, `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: broken}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Broken
    spec:
      replicas: integer
  resources:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${schema.spec.nam}
      spec:
        replicas: ${schema.spec.replicaz}
`), graph.Options{})
	require.Error(t, err)
	assert.ErrorIs(t, err, graph.ErrExpression)
	assert.Contains(t, err.Error(), `resource "deployment": spec.replicas: ${schema.spec.replicaz}: undefined field 'replicaz'`)
	assert.Contains(t, err.Error(), `resource "deployment": metadata.name: ${schema.spec.nam}: undefined field 'nam'`)
	var ge *graph.Error
	require.True(t, errors.As(err, &ge))
}
