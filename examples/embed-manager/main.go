// Command embed-manager is a platform's existing controller-runtime manager,
// with its own controller, to which a fleetgraph hub is added. The hub
// wiring is the region marked embed:begin/embed:end in run; nothing else
// changes.
//
//	go run ./examples/embed-manager --kubeconfig hub.kubeconfig
//
// Spokes are kubeconfig Secrets labelled fleetgraph.dev/kubeconfig=true in
// the hub's fleetgraph-system namespace; ResourceGraphDefinitions applied to
// the hub are served on every spoke.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
)

func main() {
	metricsAddr := flag.String("metrics-bind-address", ":8080", "address the metrics endpoint binds to")
	loopback := flag.Bool("allow-loopback-spokes", false, "accept spokes on loopback addresses (a local test fleet); refused by default")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	// As in any controller-runtime program, set the logger first: every
	// controller's work queue logs, and with no logger set controller-runtime
	// prints a "log.SetLogger(...) was never called" stack trace once 30 s
	// have passed. Only the first SetLogger counts.
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	safety := secret.Safety{AllowLoopback: *loopback}
	if err := run(ctrl.SetupSignalHandler(), ctrl.GetConfigOrDie(), *metricsAddr, safety); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run runs the platform's manager with the hub; safety is what the
// spokes' kubeconfigs may do beyond the provider's safe defaults.
func run(ctx context.Context, cfg *rest.Config, metricsAddr string, safety secret.Safety) error {
	// The platform's manager and controller, as they were before fleetgraph.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: metricsAddr}})
	if err != nil {
		return err
	}
	if err := (&TeamDefaults{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}

	// The fleetgraph hub wiring: the region between the markers is the
	// README's embedding snippet and sdk's ExampleNewHub (snippet_test.go).
	// embed:begin
	// Spokes are kubeconfig Secrets on the hub, in namespace fleetgraph-system;
	// safety relaxes what their kubeconfigs may do (zero: nothing unsafe).
	provider := secret.New(secret.Options{Safety: safety})
	// The same manager, multicluster-aware; it keeps its controllers.
	mcMgr, err := mcmanager.WithMultiCluster(mgr, provider)
	if err != nil {
		return err
	}
	// nil: the hub serves the manager's provider. Options document defaults.
	hub, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
	if err != nil {
		return err
	}
	// The provider watches its Secrets; the hub serves this cluster's RGDs.
	if err := errors.Join(provider.SetupWithManager(mcMgr), hub.SetupWithManager(mcMgr)); err != nil {
		return err
	}
	// Start mcMgr, not mgr: only the multicluster manager starts the provider.
	return mcMgr.Start(ctx)
	// embed:end
}
