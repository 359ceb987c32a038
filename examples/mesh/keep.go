package main

import (
	"context"
	"fmt"
	"io"
	"os"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// keepFleet writes the fleet's kubeconfigs, says how to use them and
// waits for ctx to end (Ctrl-C); then it removes them. kept, if set, is
// called once they are written.
func keepFleet(ctx context.Context, out io.Writer, fleet *fgtesting.Fleet, kept func(fgtesting.KubeconfigFiles)) error {
	dir, err := os.MkdirTemp("", "fleetgraph-mesh-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	files, err := fgtesting.WriteKubeconfigs(dir, fleet.Clusters()...)
	if err != nil {
		return err
	}
	say(out, "The fleet and Mesh \"demo\" keep running. %s has a context per cluster (hub, spoke-1, spoke-2):", files.Merged)
	fmt.Fprintf(out, "    export KUBECONFIG=%s\n", files.Merged)
	fmt.Fprintf(out, "    kubectl --context hub get resourcegraphdefinitions,meshes\n")
	fmt.Fprintf(out, "    kubectl --context spoke-1 get services,configmaps,secrets\n")
	fmt.Fprintf(out, "    kubectl --context hub delete mesh demo     # cleans both spokes\n")
	say(out, "Each cluster also has a kubeconfig of its own there (hub.kubeconfig, spoke-1.kubeconfig, ...). Targets may name spokes labelled mesh=true: both are.")
	say(out, "Press Ctrl-C to stop the fleet.")
	if kept != nil {
		kept(files)
	}
	<-ctx.Done()
	return nil
}
