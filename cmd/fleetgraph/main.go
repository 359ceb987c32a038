// Command fleetgraph checks, draws and operates fleetgraph resource graphs:
// validate, generate and diagram work on RGD files without a cluster;
// status and rollout read and steer a fleet from its hub cluster.
//
//	go install ./cmd/fleetgraph
//	fleetgraph validate rgds/
//	fleetgraph status --watch
//
// Named kubectl-fleetgraph (a symlink, or go build -o kubectl-fleetgraph),
// it is a kubectl plugin: kubectl fleetgraph status. See `fleetgraph --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[0], os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
