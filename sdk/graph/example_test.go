package graph_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

const exampleRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: webapp
spec:
  schema:
    apiVersion: v1alpha1
    kind: WebApp
    spec:
      image: string | default="nginx"
      replicas: integer | default=1 minimum=0
    status:
      configName: ${config.metadata.name}
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-config
      data:
        image: ${schema.spec.image}
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${schema.metadata.name}
        annotations:
          config: ${config.metadata.name}
      spec:
        replicas: ${schema.spec.replicas}
`

// Compile a kro ResourceGraphDefinition, then render its resources in
// dependency order for one instance.
func ExampleCompile() {
	var rgd v1alpha1.ResourceGraphDefinition
	if err := yaml.Unmarshal([]byte(exampleRGD), &rgd); err != nil {
		panic(err)
	}
	g, err := graph.Compile(&rgd, graph.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(g.CRD.Name, "serves", g.Instance.GVK.Kind)

	vals := graph.Values{"schema": map[string]any{
		"metadata": map[string]any{"name": "shop", "namespace": "default"},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(2)},
	}}
	for _, level := range g.Levels {
		for _, n := range level {
			obj, err := n.Render(context.Background(), vals, nil)
			if errors.Is(err, graph.ErrPending) {
				fmt.Println(n.ID, "waits for", n.Dependencies)
				continue
			}
			if err != nil {
				panic(err)
			}
			fmt.Println(n.ID, "->", obj.GetKind(), obj.GetName())
			vals[n.ID] = obj.Object // in real life: the object read back from the cluster
		}
	}
	status, _ := g.Status(context.Background(), vals)
	fmt.Println("status:", status)
	// Output:
	// webapps.kro.run serves WebApp
	// config -> ConfigMap shop-config
	// deployment -> Deployment shop
	// status: map[configName:shop-config]
}

// Compile errors name the resource, the field and the expression.
func ExampleError() {
	var rgd v1alpha1.ResourceGraphDefinition
	if err := yaml.Unmarshal([]byte(exampleRGD), &rgd); err != nil {
		panic(err)
	}
	rgd.Spec.Resources[1].Template.Raw = []byte(`{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": {"name": "x"}, "spec": {"replicas": "${schema.spec.replicaz}"}}`)

	_, err := graph.Compile(&rgd, graph.Options{})
	var ge *graph.Error
	if errors.As(err, &ge) {
		fmt.Println(ge.ResourceID, ge.Path, ge.Expression)
	}
	fmt.Println(errors.Is(err, graph.ErrExpression))
	fmt.Println(err)
	// Output:
	// deployment spec.replicas ${schema.spec.replicaz}
	// true
	// resource "deployment": spec.replicas: ${schema.spec.replicaz}: undefined field 'replicaz'
}

// A tenant's RGD is bounded in what it may make the compiler build: a
// custom type made of two copies of the previous one would double at each
// level, and is refused before anything is copied, naming the limit.
func ExampleCompileContext() {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: doubling
spec:
  schema:
    apiVersion: v1alpha1
    kind: Doubling
    types:
      T0: string
      T1: {a: T0, b: T0}
      T2: {a: T1, b: T1}
      T3: {a: T2, b: T2}
      T4: {a: T3, b: T3}
    spec:
      root: T4
  resources: []
`), rgd); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := graph.CompileContext(ctx, rgd, graph.Options{Limits: graph.Limits{MaxSchemaProperties: 20}})
	fmt.Println(errors.Is(err, graph.ErrLimit))
	fmt.Println(err)
	// Output:
	// true
	// spec.schema.types.T4.b: schema too large: using type T3 here makes the schema at least 30 properties, over the limit of 20 (Limits.MaxSchemaProperties)
}

// A hub graph: db goes to spoke-1, egress to the cluster the instance
// names, and a runtime resolves both before writing anything.
func ExampleNode_ResolveTarget() {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := yaml.Unmarshal([]byte(`
metadata: {name: link}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Link
    spec: {egressCluster: string}
  resources:
  - id: db
    target: {cluster: {name: spoke-1}}
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: db}, data: {port: "5432"}}
  - id: egress
    target: {cluster: {name: "${schema.spec.egressCluster}"}}
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: egress}, data: {upstream: "${db.data.port}"}}
`), rgd); err != nil {
		panic(err)
	}
	g, err := graph.Compile(rgd, graph.Options{})
	if err != nil {
		panic(err)
	}
	vals := graph.Values{"schema": map[string]any{"spec": map[string]any{"egressCluster": "spoke-2"}}}
	fmt.Println("hub graph:", g.IsHubGraph())
	for _, n := range g.Targets() {
		t, err := n.ResolveTarget(context.Background(), vals, nil)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s -> %s (computed: %v)\n", n.ID, t.Cluster, t.Computed)
	}
	// Output:
	// hub graph: true
	// db -> spoke-1 (computed: false)
	// egress -> spoke-2 (computed: true)
}
