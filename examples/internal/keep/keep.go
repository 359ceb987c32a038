// Package keep keeps a demo's fleet running after the demo (its -keep
// flag): it writes the fleet's kubeconfigs, one of them with a context per
// cluster, says how to use them, and waits for Ctrl-C. It is the demos'
// plumbing, not something they teach.
package keep

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// Options says what a kept demo tells its user.
type Options struct {
	// Demo names the demo, in the temporary directory's name.
	Demo string
	// Kept says what keeps running besides the fleet, following "the
	// fleet" (", its hub and Mesh demo"). Defaults to "".
	Kept string
	// Try are kubectl commands (or others) to suggest, one a line, after
	// the line that exports KUBECONFIG.
	Try []string
	// Notes are said after the commands, one a line.
	Notes []string
	// OnKept, if set, is called once the kubeconfigs are written (tests
	// use them).
	OnKept func(fgtesting.KubeconfigFiles)
}

// Fleet writes the kubeconfigs of clusters (the hub first) to a temporary
// directory (fgtesting.WriteKubeconfigs), prints how to use them and waits
// until ctx ends; then it removes them, as their clusters stop.
func Fleet(ctx context.Context, out io.Writer, clusters []*fgtesting.Cluster, o Options) error {
	dir, err := os.MkdirTemp("", "fleetgraph-"+o.Demo+"-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	files, err := fgtesting.WriteKubeconfigs(dir, clusters...)
	if err != nil {
		return err
	}
	names := make([]string, len(clusters))
	for i, c := range clusters {
		names[i] = c.Name
	}
	fmt.Fprintf(out, "==> Kept running: the fleet%s. %s has a context per cluster (%s):\n", o.Kept, files.Merged, strings.Join(names, ", "))
	fmt.Fprintf(out, "    export KUBECONFIG=%s\n", files.Merged)
	for _, cmd := range o.Try {
		fmt.Fprintf(out, "    %s\n", cmd)
	}
	fmt.Fprintf(out, "==> Each cluster also has a kubeconfig of its own there (%s.kubeconfig, ...).\n", names[0])
	for _, note := range o.Notes {
		fmt.Fprintf(out, "==> %s\n", note)
	}
	fmt.Fprintln(out, "==> Press Ctrl-C to stop the fleet.")
	if o.OnKept != nil {
		o.OnKept(files)
	}
	<-ctx.Done()
	return nil
}
