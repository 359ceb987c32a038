// Command mesh is the multicluster proposal's reviewers' example as one
// hub graph: on a local fleet (a hub and two spokes, each a real
// kube-apiserver and etcd on loopback), a Mesh instance on the hub puts a
// shared trust bundle in both spokes, an ingress Service in each, and an
// egress ConfigMap in each that points at the other spoke's ingress, its
// address read from that spoke. Deleting the instance cleans both spokes.
// The graph is mesh.yaml, applied to the hub as YAML and served by the
// hub's RGD controller.
//
//	make mesh                  # or: go run ./examples/mesh
//	go run ./examples/mesh -keep    # keep the fleet and the Mesh up to explore them
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
	flag.BoolVar(&o.keep, "keep", false, "keep the fleet and the Mesh running after the demo and write kubeconfigs for them")
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
	if _, err := run(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "mesh:", err)
		os.Exit(1)
	}
}
