// Command mesh is the multicluster proposal's reviewers' example as one
// hub graph: on a local fleet (a hub and two spokes, each a real
// kube-apiserver and etcd on loopback), a Mesh instance on the hub puts a
// shared trust bundle in both spokes, an ingress Service in each, and an
// egress ConfigMap in each that points at the other spoke's ingress, its
// address read from that spoke. Deleting the instance cleans both spokes.
//
//	make mesh                  # or: go run ./examples/mesh
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
	if _, err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mesh:", err)
		os.Exit(1)
	}
}
