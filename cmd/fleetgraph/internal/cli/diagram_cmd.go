package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/diagram"
)

func newDiagramCommand(g *globals, name string) *cobra.Command {
	f := &compileFlags{}
	output := "mermaid"
	cmd := &cobra.Command{
		Use:   "diagram FILE",
		Short: "Draw an RGD's resources, levels and dependencies (Mermaid, DOT, SVG)",
		Long: `Compile the RGDs of FILE offline and draw each graph: one node per
resource, grouped by level (the resources of one level are applied in
parallel, after every level above), and an edge from each resource to the
ones that read it.

A forEach resource is drawn as a stack with what each iterator ranges over,
an externalRef as a cylinder (read, never written), a resource with
includeWhen with a dashed border and its conditions. A hub graph's levels
are cut by the cluster each resource is written in: its target's name, the
expression that computes it, or the instance's own cluster, the hub.

-o mermaid (the default; GitHub renders it in Markdown in a mermaid code
block), -o dot (Graphviz), or -o svg, which runs Graphviz's dot and needs it
installed.`,
		Example: example(name, `  fleetgraph diagram webapp.yaml
  fleetgraph diagram webapp.yaml -o svg > webapp.svg
  fleetgraph diagram webapp.yaml -o dot | dot -Tpng > webapp.png`),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "mermaid", "dot", "svg"); err != nil {
				return err
			}
			graphs, err := f.compileFile(g, args[0])
			if err != nil {
				return err
			}
			for i, c := range graphs {
				m := diagram.New(c.graph, c.doc.RGD)
				if i > 0 && output != "svg" {
					fmt.Fprintln(g.streams.Out)
				}
				switch output {
				case "mermaid":
					fmt.Fprint(g.streams.Out, m.Mermaid())
				case "dot":
					fmt.Fprint(g.streams.Out, m.DOT())
				case "svg":
					svg, err := m.SVG(cmd.Context())
					if err != nil {
						return err
					}
					if _, err := g.streams.Out.Write(svg); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	f.bind(cmd)
	g.bindKubeconfig(cmd, false)
	cmd.Flags().StringVarP(&output, "output", "o", output, "output format: mermaid, dot or svg (needs Graphviz)")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion("mermaid", "dot", "svg"))
	return cmd
}
