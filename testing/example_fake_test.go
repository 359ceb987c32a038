package testing_test

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A fake cluster behaves like an API server where controllers look: a CRD
// written to it is established and discovered, and objects get UIDs and
// generations. sdk.Hub serves graphs on fake clusters given to it through
// a FakeProvider (see TestFakeFleetServesTheWebAppGraph in package sdk).
func ExampleFakeCluster() {
	ctx := context.Background()
	cl := fgtesting.NewFakeCluster(fgtesting.FakeClusterOptions{})
	defer cl.Close()

	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	if err := cl.GetClient().Create(ctx, fgtesting.NewCRD(gvk, "gadgets", apiextensionsv1.NamespaceScoped)); err != nil {
		panic(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cl.GetConfig(), cl.GetHTTPClient())
	if err != nil {
		panic(err)
	}
	served, err := dc.ServerResourcesForGroupVersion("example.com/v1")
	if err != nil {
		panic(err)
	}
	fmt.Println(served.APIResources[0].Name)

	gadget := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
	gadget.SetGroupVersionKind(gvk)
	gadget.SetNamespace("default")
	gadget.SetName("g")
	if err := cl.GetClient().Create(ctx, gadget); err != nil {
		panic(err)
	}
	fmt.Println(gadget.GetUID() != "", gadget.GetGeneration())
	// Output:
	// gadgets
	// true 1
}
