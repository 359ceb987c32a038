// Command quickstart shows fleetgraph end to end on a local fleet: a hub and
// two spokes, each a real kube-apiserver and etcd on loopback. It registers
// the spokes as kubeconfig Secrets on the hub, embeds a fleetgraph Hub in a
// multicluster manager, applies a WebApp ResourceGraphDefinition to the hub,
// creates one WebApp on each spoke, waits until both are ACTIVE and prints
// the fleet.
//
//	make quickstart                       # or: go run ./examples/quickstart
//	go run ./examples/quickstart -keep    # keep the fleet up to explore it
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func main() {
	var o options
	flag.BoolVar(&o.keep, "keep", false, "keep the fleet running after the demo and write kubeconfigs for it (one with a context per cluster)")
	flag.IntVar(&o.spokes, "spokes", 2, "number of spoke clusters")
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
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// options says how the demo runs.
type options struct {
	// spokes is the number of spoke clusters.
	spokes int
	// keep keeps the fleet running after the demo, until ctx ends.
	keep bool
	// kept, if set, is called once the fleet is kept, with its
	// kubeconfigs (for tests).
	kept func(fgtesting.KubeconfigFiles)
}

// say prints one step of the story.
func say(out io.Writer, format string, args ...any) {
	fmt.Fprintf(out, "==> "+format+"\n", args...)
}
