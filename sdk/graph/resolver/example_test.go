package resolver_test

import (
	"fmt"

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
