// Command kcp runs a fleetgraph hub in a kcp setup, in one of two modes.
//
// Workspace mode (the default): ResourceGraphDefinitions live in one
// platform workspace (the hub), and every workspace below a tenants
// workspace is a spoke that receives the generated CRD and reconciles its
// own instances.
//
//	go run ./examples/kcp --kubeconfig <kcp>/admin.kubeconfig \
//	    --hub root:platform --tenants root:tenants
//
// APIExport mode (--export <name>): the platform workspace is a kcp service
// provider. Each graph is published there as an APIResourceSchema of the
// APIExport called <name>; every workspace that binds the export (and
// accepts its permission claims) serves the graph's kind and reconciles its
// own instances, reached through the export's virtual workspace.
//
//	go run ./examples/kcp --kubeconfig <kcp>/admin.kubeconfig \
//	    --hub root:platform --export platform
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/kcp"
	"github.com/fleetgraph/fleetgraph/sdk"
)

func main() {
	hubPath := flag.String("hub", "root:platform", "workspace holding the ResourceGraphDefinitions")
	tenants := flag.String("tenants", "root:tenants", "workspace whose child workspaces are the spokes")
	export := flag.String("export", "", "serve graphs through the APIExport of this name in --hub instead (APIExport mode)")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	ctx, cfg := ctrl.SetupSignalHandler(), ctrl.GetConfigOrDie()
	var err error
	if *export != "" {
		err = runExport(ctx, cfg, logicalcluster.NewPath(*hubPath), *export)
	} else {
		err = run(ctx, cfg, logicalcluster.NewPath(*hubPath), logicalcluster.NewPath(*tenants))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run serves the RGDs of workspace hub on every workspace below tenants.
// cfg reaches the kcp server as a user allowed to work in both.
func run(ctx context.Context, cfg *rest.Config, hub, tenants logicalcluster.Path) error {
	// Spokes: the Ready workspaces below tenants, named by logical cluster.
	provider, err := kcp.New(cfg, tenants, kcp.Options{})
	if err != nil {
		return err
	}
	// In workspace mode each spoke workspace gets its own copy of the
	// generated CRD, exactly as a plain cluster does.
	return serve(ctx, workspaceConfig(cfg, hub), provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
}

// runExport serves the RGDs of workspace hub through the APIExport called
// export there, to every workspace that binds it.
func runExport(ctx context.Context, cfg *rest.Config, hub logicalcluster.Path, export string) error {
	hubCfg := workspaceConfig(cfg, hub)
	// Spokes: the workspaces with a Ready APIBinding to the export, reached
	// through its virtual workspace.
	provider, err := kcp.NewAPIExport(hubCfg, export, kcp.APIExportOptions{})
	if err != nil {
		return err
	}
	// The provider is also the hub's publisher (hub.Publisher): each graph
	// becomes an APIResourceSchema of the export, with permission claims
	// for its child kinds; nothing is applied to the consumers' workspaces.
	return serve(ctx, hubCfg, provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
}

// serve runs a hub for provider's clusters in the workspace hubCfg reaches.
func serve(ctx context.Context, hubCfg *rest.Config, provider multicluster.Provider, opts sdk.Options) error {
	mgr, err := mcmanager.New(hubCfg, provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	h, err := sdk.NewHub(provider, opts)
	if err != nil {
		return err
	}
	if err := h.SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// workspaceConfig points cfg at one workspace: <server>/clusters/<path>.
func workspaceConfig(cfg *rest.Config, ws logicalcluster.Path) *rest.Config {
	out := rest.CopyConfig(cfg)
	host := strings.TrimRight(out.Host, "/")
	if i := strings.Index(host, "/clusters/"); i >= 0 {
		host = host[:i]
	}
	out.Host = host + ws.RequestPath()
	return out
}
