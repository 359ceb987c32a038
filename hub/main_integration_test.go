//go:build integration

package hub_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// fleet is the package's one fleet: a hub cluster and two spokes. Tests
// share it, each with CRDs of its own names, and run in parallel.
var fleet *fgtesting.Fleet

func TestMain(m *testing.M) {
	fgtesting.SetupLogs()
	f, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fleet = f
	code := m.Run()
	if err := f.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	serviceGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
)

// graphOf is a graph as a platform running kro would make one: a
// generated CRD for gvk, labelled as fleetgraph's, and the kinds its
// instances create.
func graphOf(name string, gvk schema.GroupVersionKind, plural string, kinds ...schema.GroupVersionKind) hub.Graph {
	crd := fgtesting.NewCRD(gvk, plural, apiextensionsv1.NamespaceScoped)
	crd.Labels = map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByFleetgraph}
	return hub.Graph{Name: name, Generation: 1, CRD: crd, Kinds: kinds}
}

// engage engages cl with f under name until the test ends; the cluster
// then leaves, taking its metric series with it.
func engage(t testing.TB, f *hub.FanOut, name string, cl cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := f.Engage(ctx, multicluster.ClusterName(name), cl); err != nil {
		t.Fatal(err)
	}
}
