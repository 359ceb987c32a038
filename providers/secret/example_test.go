package secret_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/secret"
)

// Engage every cluster whose kubeconfig Secret sits in fleetgraph-system on
// the hub, and print the clusters as they come.
func Example() {
	ctx := context.Background()
	var hubConfig *rest.Config // the hub's credentials, e.g. ctrl.GetConfigOrDie()

	provider := secret.New(secret.Options{
		// Also read Secrets written for multicluster-runtime's kubeconfig
		// provider's label instead of fleetgraph.dev/kubeconfig=true.
		LabelSelector: labels.SelectorFromSet(labels.Set{"sigs.k8s.io/multicluster-runtime-kubeconfig": "true"}),
	})
	mgr, err := mcmanager.New(hubConfig, provider, manager.Options{})
	if err != nil {
		panic(err)
	}
	if err := provider.SetupWithManager(mgr); err != nil {
		panic(err)
	}
	if err := mgr.Add(printer{provider}); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctx); err != nil {
		panic(err)
	}
}

// printer prints each engaged cluster with its labels.
type printer struct{ provider *secret.Provider }

func (p printer) Start(ctx context.Context) error { <-ctx.Done(); return nil }

func (p printer) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	fmt.Println("engaged", name, p.provider.Labels(name))
	go func() {
		<-ctx.Done()
		fmt.Println("disengaged", name)
	}()
	return nil
}
