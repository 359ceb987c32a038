// Command rollout shows a two-wave rollout on a local fleet: a hub and three
// spokes, each a real kube-apiserver and etcd on loopback, registered as
// kubeconfig Secrets labelled cluster.fleetgraph.dev/ring=canary or main. A
// GraphRollout sends every new revision of the "greeting" graph to the
// canary ring first and to the main ring only once the canary's instances
// have been Ready for a few seconds. The demo changes the graph and prints
// the rollout as it moves.
//
//	make rollout-demo                  # or: go run ./examples/rollout
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func main() {
	verbose := flag.Bool("v", false, "show controller logs")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	if *verbose {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rollout:", err)
		os.Exit(1)
	}
}
