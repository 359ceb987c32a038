package hub

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	serviceGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
)

// webAppGraph is a graph as a platform running kro would make one: the
// generated CRD of a WebApp, labelled as fleetgraph's, and the kinds its
// instances create.
func webAppGraph(name string) Graph {
	gvk := schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "WebApp"}
	crd := fgtesting.NewCRD(gvk, "webapps", apiextensionsv1.NamespaceScoped)
	crd.Labels = map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByFleetgraph}
	return Graph{Name: name, Generation: 1, CRD: crd, Kinds: []schema.GroupVersionKind{deploymentGVK, serviceGVK}}
}

// engage engages cl with f under name until the test ends; the cluster
// then leaves, taking its metric series with it.
func engage(t testing.TB, f *FanOut, name string, cl cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := f.Engage(ctx, multicluster.ClusterName(name), cl); err != nil {
		t.Fatal(err)
	}
}
