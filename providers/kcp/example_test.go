package kcp_test

import (
	"context"
	"fmt"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/kcp"
)

// Engage every workspace of the tree below root:org, with the hub in
// root:org itself, and print each workspace's path as it is engaged.
func Example() {
	ctx := context.Background()
	var kcpConfig *rest.Config // kcp credentials, e.g. from admin.kubeconfig

	provider, err := kcp.New(kcpConfig, logicalcluster.NewPath("root:org"), kcp.Options{Recursive: true})
	if err != nil {
		panic(err)
	}
	hubConfig := rest.CopyConfig(kcpConfig)
	hubConfig.Host += logicalcluster.NewPath("root:org").RequestPath()
	mgr, err := mcmanager.New(hubConfig, provider, manager.Options{})
	if err != nil {
		panic(err)
	}
	if err := mgr.Add(pathPrinter{provider}); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctx); err != nil {
		panic(err)
	}
}

// Engage every workspace that binds the APIExport "widgets" published in
// root:provider.
func ExampleNewAPIExport() {
	var kcpConfig *rest.Config
	providerWorkspace := rest.CopyConfig(kcpConfig)
	providerWorkspace.Host += logicalcluster.NewPath("root:provider").RequestPath()

	provider, err := kcp.NewAPIExport(providerWorkspace, "widgets", kcp.APIExportOptions{})
	if err != nil {
		panic(err)
	}
	mgr, err := mcmanager.New(providerWorkspace, provider, manager.Options{})
	if err != nil {
		panic(err)
	}
	_ = mgr.Start(context.Background())
}

type pathPrinter struct{ provider *kcp.Provider }

func (p pathPrinter) Start(ctx context.Context) error { <-ctx.Done(); return nil }

func (p pathPrinter) Engage(_ context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	fmt.Println("engaged", name, "at", p.provider.Path(name))
	return nil
}
