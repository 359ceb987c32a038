package resolver_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

// Compile against the schemas of the cluster cfg reaches, so that
// expressions reading child resources are type-checked.
func ExampleNewForConfig() {
	var cfg *rest.Config // e.g. ctrl.GetConfigOrDie() or mgr.GetConfig()
	var rgd *v1alpha1.ResourceGraphDefinition

	res, err := resolver.NewForConfig(cfg, resolver.Options{})
	if err != nil {
		panic(err)
	}
	g, err := graph.Compile(rgd, graph.Options{Resolver: res})
	if err != nil {
		panic(err)
	}
	fmt.Println(g.Instance.GVK)
}

// Bound a compile's waits on the API server by a deadline: a server that
// answers with errors for a while is not waited on past it. The Bound
// shares the Resolver's cache, so make one per compile.
func ExampleResolver_WithContext() {
	var res *resolver.Resolver // one per cluster, kept for the process
	var rgd *v1alpha1.ResourceGraphDefinition

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, err := graph.Compile(rgd, graph.Options{Resolver: res.WithContext(ctx)})
	if err != nil {
		panic(err)
	}
	fmt.Println(g.Instance.GVK)
}
