package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/status"
)

type statusOptions struct {
	output     string
	watch      bool
	interval   time.Duration
	color      string
	recordNS   string
	recordTTL  time.Duration
	maxColumns int
}

func newStatusCommand(g *globals, name string) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status [RGD]",
		Short: "Show which revision of each graph serves which cluster, and what is wrong",
		Long: `Read, from the hub cluster alone, each graph's state on each cluster. With an
RGD named: its table of clusters × CRD state, the revision served and the one
the cluster should serve, instances (total, ready, in ERROR), and why the
cluster does not serve the latest revision (REASON: RollingOut, Held,
RolledBack, Failed, GateNotPassed, Incompatible, Unreachable, ReplicaGone),
then, for a hub graph, the clusters its instances write to. Without: the
fleet matrix, graphs × clusters, each cell the revision served ("1→2" while a
cluster should move to 2) or the CRD state when it is not established.

It shows what the hub computed and published there, and computes nothing
itself: the hub's status records (ConfigMaps in --record-namespace, every
cluster of every graph, kept by a lone hub and by each hub replica), the
RGD's status (conditions, the latest revision, status.fleet) and the
GraphRollout that rules the graph (waves, holds). It needs no access to
spokes. -o json omits what the hub did not publish (never a -1).

-o dot and -o svg draw the fleet matrix as a picture (the svg is drawn by the
command itself; the dot source renders with Graphviz): each cell filled by its
health, with the revision served and the instances ready and in error, and
the cluster's message as a tooltip.

--watch redraws in place on a terminal and prints a new frame whenever the
view changes otherwise. Colours are on for a terminal (--color).`,
		Example: example(name, `  fleetgraph status
  fleetgraph status webapp -o wide
  fleetgraph status webapp --watch
  fleetgraph status -o svg > fleet.svg
  fleetgraph status -o json | jq '.graphs[].clusters[] | select(.crd != "Established")'`),
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRGDs(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			graph := ""
			if len(args) == 1 {
				graph = args[0]
			}
			return o.run(cmd.Context(), g, graph)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.output, "output", "o", "", "output format: wide, json, yaml, or the fleet matrix as dot or svg (default: tables)")
	fs.BoolVarP(&o.watch, "watch", "w", false, "keep watching and show each change")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "how often --watch reads the hub")
	fs.StringVar(&o.color, "color", "auto", "colour the states: auto (on a terminal), always or never")
	fs.StringVar(&o.recordNS, "record-namespace", "kube-system", "namespace of the hub replicas' status records (the hub's Options.Replicas.Namespace)")
	fs.DurationVar(&o.recordTTL, "record-ttl", time.Minute, "how long a replica's record counts after its renewal (the hub's Options.Replicas.StatusTTL)")
	fs.IntVar(&o.maxColumns, "max-columns", 8, "most cluster columns of the fleet matrix; past it only clusters with a problem get one")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion("wide", "json", "yaml", "dot", "svg"))
	_ = cmd.RegisterFlagCompletionFunc("color", fixedCompletion("auto", "always", "never"))
	return cmd
}

func (o *statusOptions) run(ctx context.Context, g *globals, graph string) error {
	if err := checkOutput(o.output, "", "wide", "json", "yaml", "dot", "svg"); err != nil {
		return err
	}
	if o.watch && (o.output == "dot" || o.output == "svg") {
		return fmt.Errorf("--watch redraws text: -o %s draws one picture", o.output)
	}
	color, err := useColor(o.color, g.streams.Out)
	if err != nil {
		return err
	}
	c, err := g.hubClient()
	if err != nil {
		return err
	}
	frame := func() ([]byte, error) { return o.frame(ctx, c, graph, color) }
	if !o.watch {
		b, err := frame()
		if err != nil {
			return err
		}
		_, err = g.streams.Out.Write(b)
		return err
	}
	return watch(ctx, g.streams.Out, o.interval, isTerminal(g.streams.Out), frame)
}

// frame renders the view once.
func (o *statusOptions) frame(ctx context.Context, c client.Client, graph string, color bool) ([]byte, error) {
	f, err := status.Read(ctx, c, status.Options{Graph: graph, RecordNamespace: o.recordNS, RecordTTL: o.recordTTL})
	if errors.Is(err, status.ErrNoGraph) {
		return nil, failed("%v", err)
	}
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	st := status.Style{Color: color, Wide: o.output == "wide", MaxColumns: o.maxColumns}
	switch {
	case o.output == "json":
		err = writeJSON(&b, f)
	case o.output == "yaml":
		err = writeYAML(&b, f)
	case o.output == "dot": // the fleet matrix as a picture (status/matrix_*.go)
		err = status.WriteMatrixDOT(&b, f, st)
	case o.output == "svg":
		err = status.WriteMatrixSVG(&b, f, st)
	case graph != "":
		err = status.WriteGraphs(&b, f, st)
	default:
		err = status.WriteMatrix(&b, f, st)
		if err == nil && st.Wide {
			fmt.Fprintln(&b)
			err = status.WriteGraphs(&b, f, st)
		}
	}
	return b.Bytes(), err
}

// watch writes a frame every interval until ctx ends: on a terminal it
// replaces the last one in place, with the time of the last read;
// elsewhere it writes a frame only when it differs from the last,
// separated by a blank line. A failed read is shown, and watching goes
// on.
func watch(ctx context.Context, w io.Writer, interval time.Duration, tty bool, frame func() ([]byte, error)) error {
	var last []byte
	if tty {
		permit(w, clearScreenSequence) // escape.go
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		b, err := frame()
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		if err != nil {
			b = fmt.Appendf(nil, "error: %v\n", err)
		}
		switch {
		case tty:
			if _, err := fmt.Fprintf(w, "%sEvery %s, last read %s (Ctrl-C to stop)\n\n%s", clearScreen, interval, time.Now().Format(time.TimeOnly), b); err != nil {
				return err
			}
		case !bytes.Equal(b, last):
			if last != nil {
				fmt.Fprintln(w)
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		last = b
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// completeRGDs completes the names of the hub's RGDs.
func completeRGDs(g *globals) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := g.hubClient()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		f, err := status.Read(cmd.Context(), c, status.Options{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []string
		for _, gr := range f.Graphs {
			names = append(names, gr.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
