// Command kcp runs a fleetgraph hub in a kcp setup, in workspace mode:
// ResourceGraphDefinitions live in one platform workspace (the hub), and
// every workspace below a tenants workspace is a spoke that receives the
// generated CRD and reconciles its own instances.
//
//	go run ./examples/kcp --kubeconfig <kcp>/admin.kubeconfig \
//	    --hub root:platform --tenants root:tenants
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

	"github.com/fleetgraph/fleetgraph/providers/kcp"
	"github.com/fleetgraph/fleetgraph/sdk"
)

func main() {
	hubPath := flag.String("hub", "root:platform", "workspace holding the ResourceGraphDefinitions")
	tenants := flag.String("tenants", "root:tenants", "workspace whose child workspaces are the spokes")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	err := run(ctrl.SetupSignalHandler(), ctrl.GetConfigOrDie(),
		logicalcluster.NewPath(*hubPath), logicalcluster.NewPath(*tenants))
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
	mgr, err := mcmanager.New(workspaceConfig(cfg, hub), provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	// In workspace mode each spoke workspace gets its own copy of the
	// generated CRD, exactly as a plain cluster does.
	h, err := sdk.NewHub(provider, sdk.Options{InstallRGDCRD: true})
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
