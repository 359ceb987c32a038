// Command rollout shows a rollout on a local fleet: a hub and three
// spokes, each a real kube-apiserver and etcd on loopback, registered as
// kubeconfig Secrets labelled cluster.fleetgraph.dev/ring=canary or main.
// A GraphRollout (rollout.yaml) sends every new revision of the "greeting"
// graph (greeting.yaml) to the canary ring first and to the main ring
// once the canary has been healthy for a few seconds and the wave is
// approved. In one run the demo shows an approval, a held cluster that
// keeps its revision, and a bad revision that fails on the canary and is
// rolled back automatically.
//
//	make rollout-demo                  # or: go run ./examples/rollout
//	go run ./examples/rollout -keep    # keep the fleet up to explore it
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
	var o options
	flag.BoolVar(&o.keep, "keep", false, "keep the fleet running after the demo and write kubeconfigs for it")
	verbose := flag.Bool("v", false, "show controller logs")
	flag.Parse()
	// controller-runtime takes the first logger it is given: set it once.
	logger := logr.Discard()
	if *verbose {
		logger = zap.New(zap.UseDevMode(true))
	}
	ctrl.SetLogger(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "rollout:", err)
		os.Exit(1)
	}
}
