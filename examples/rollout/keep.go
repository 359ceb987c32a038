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
	dir, err := os.MkdirTemp("", "fleetgraph-rollout-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	files, err := fgtesting.WriteKubeconfigs(dir, fleet.Clusters()...)
	if err != nil {
		return err
	}
	say(out, "The fleet keeps running. %s has a context per cluster (hub, spoke-1, spoke-2, spoke-3):", files.Merged)
	fmt.Fprintf(out, "    export KUBECONFIG=%s\n", files.Merged)
	fmt.Fprintf(out, "    kubectl --context hub get graphrollouts,graphrevisions\n")
	fmt.Fprintf(out, "    kubectl --context hub get events -A --field-selector involvedObject.name=%s\n", graphName)
	fmt.Fprintf(out, "    kubectl --context %s get greetings,configmaps\n", heldCluster)
	say(out, "Each cluster also has a kubeconfig of its own there (hub.kubeconfig, spoke-1.kubeconfig, ...). The hub lets hub graphs target any spoke.")
	say(out, "Press Ctrl-C to stop the fleet.")
	if kept != nil {
		kept(files)
	}
	<-ctx.Done()
	return nil
}
