// Command fleetgraph-hub runs a fleetgraph hub on its own: the way to use
// fleetgraph without writing Go. It serves the ResourceGraphDefinitions on
// the hub cluster (the cluster of --kubeconfig, or the in-cluster config) on
// every spoke the chosen provider engages.
//
//	fleetgraph-hub --kubeconfig hub.kubeconfig                      # spokes: kubeconfig Secrets
//	fleetgraph-hub --provider=single                                # the hub is its own only spoke
//	fleetgraph-hub --provider=kcp-workspaces --kcp-parent=root:org  # kcp workspaces below root:org
//	fleetgraph-hub --leader-elect --leader-election-namespace=fleetgraph-system
//	fleetgraph-hub --replicas-shard --shard-namespace=fleetgraph-system   # one of N replicas
//	fleetgraph-hub --pull                                           # also serve pull clusters (cmd/fleetgraph-agent)
//
// With --replicas-shard every replica serves, each its own share of the
// spokes (a peer Lease per replica in --shard-namespace, holding the
// replicas it decides by); when one dies the others take its spokes over
// within lease + 2 × min(renew, probe). Each replica keeps a
// record of its spokes' status there, and the RGD's fleet status is their
// union.
//
// With --provider=secret (the default) a spoke is a Secret in
// --secret-namespace labelled fleetgraph.dev/kubeconfig=true whose
// "kubeconfig" key holds the spoke's kubeconfig. Kubeconfigs that would run
// a program or read a local file are refused.
//
// Flags are listed by --help. Metrics are served on --metrics-bind-address
// and liveness and readiness on --health-probe-bind-address (/healthz,
// /readyz).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func main() {
	o, err := parseFlags(flag.CommandLine, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fail(os.Stderr, err)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fail(os.Stderr, fmt.Errorf("hub cluster config: %w", err))
	}
	if err := run(ctrl.SetupSignalHandler(), cfg, o); err != nil {
		fail(os.Stderr, err)
	}
}

func fail(w io.Writer, err error) {
	fmt.Fprintln(w, "fleetgraph-hub:", err)
	os.Exit(1)
}

// run is main without the process: it returns when ctx ends or the manager
// fails.
func run(ctx context.Context, cfg *rest.Config, o options) error {
	mgr, err := newManager(cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
