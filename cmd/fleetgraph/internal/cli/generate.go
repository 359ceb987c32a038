package cli

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"
	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/sample"
)

func newGenerateCommand(g *globals, name string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Print what the hub would generate from an RGD: its CRD, a sample instance",
		Example: example(name, `  fleetgraph generate crd webapp.yaml
  fleetgraph generate instance webapp.yaml -n team-a | kubectl apply -f -`),
	}
	cmd.AddCommand(newGenerateCRDCommand(g, name), newGenerateInstanceCommand(g, name))
	return cmd
}

func newGenerateCRDCommand(g *globals, name string) *cobra.Command {
	f := &compileFlags{}
	output := "yaml"
	cmd := &cobra.Command{
		Use:   "crd FILE",
		Short: "Print the CustomResourceDefinition the hub fans out for each RGD of FILE",
		Long: `Compile the RGDs of FILE offline (as validate does) and print the
CustomResourceDefinition the hub would apply to every spoke: the same
object, labels included. Several RGDs print as several YAML documents (or a
JSON list).`,
		Example: example(name, `  fleetgraph generate crd webapp.yaml
  fleetgraph generate crd rgds.yaml --name webapp -o json`),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "yaml", "json"); err != nil {
				return err
			}
			graphs, err := f.compileFile(g, args[0])
			if err != nil {
				return err
			}
			var objs []any
			for _, c := range graphs {
				obj, err := manifestOf(c.graph.CRD)
				if err != nil {
					return err
				}
				objs = append(objs, obj)
			}
			return writeObjects(g.streams, output, objs)
		},
	}
	f.bind(cmd)
	g.bindKubeconfig(cmd, false)
	cmd.Flags().StringVarP(&output, "output", "o", output, "output format: yaml or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion("yaml", "json"))
	return cmd
}

func newGenerateInstanceCommand(g *globals, name string) *cobra.Command {
	f := &compileFlags{}
	output, instanceName := "yaml", ""
	cmd := &cobra.Command{
		Use:   "instance FILE",
		Short: "Print a sample instance of each RGD of FILE, ready to apply",
		Long: `Print an instance of the kind each RGD of FILE defines: every field with a
default, set to it, and every required field, set to a value its schema
accepts (a string is the instance's name, a number its minimum or 1, the
first value of an enum). Comments say what each field is. Namespaced kinds
get -n's namespace (or the context's, or "default").`,
		Example: example(name, `  fleetgraph generate instance webapp.yaml --instance-name shop -n team-a
  fleetgraph generate instance webapp.yaml | kubectl apply -f -`),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "yaml", "json"); err != nil {
				return err
			}
			graphs, err := f.compileFile(g, args[0])
			if err != nil {
				return err
			}
			opts := sample.Options{Name: instanceName, Namespace: g.namespace()}
			var nodes []*yamlv3.Node
			var objs []any
			for _, c := range graphs {
				node, obj, err := sample.Instance(c.graph.CRD, opts)
				if err != nil {
					return err
				}
				nodes, objs = append(nodes, node), append(objs, obj)
			}
			if output == "json" {
				return writeObjects(g.streams, output, objs)
			}
			return writeNodes(g.streams, nodes)
		},
	}
	f.bind(cmd)
	g.bindKubeconfig(cmd, true)
	cmd.Flags().StringVarP(&output, "output", "o", output, "output format: yaml or json")
	cmd.Flags().StringVar(&instanceName, "instance-name", "example", "metadata.name of the instance, also the value of required strings")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion("yaml", "json"))
	return cmd
}

// manifestOf is obj as one would apply it: no status, no empty
// creationTimestamp.
func manifestOf(obj any) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(u, "status")
	if md, ok := u["metadata"].(map[string]any); ok && md["creationTimestamp"] == nil {
		delete(md, "creationTimestamp")
	}
	return u, nil
}

// writeObjects prints objects as YAML documents or JSON (a list when there
// are several).
func writeObjects(s Streams, format string, objs []any) error {
	if format == "json" {
		if len(objs) == 1 {
			return writeJSON(s.Out, objs[0])
		}
		return writeJSON(s.Out, objs)
	}
	for i, o := range objs {
		raw, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(s.Out, "---")
		}
		if _, err := s.Out.Write(raw); err != nil {
			return err
		}
	}
	return nil
}

func writeNodes(s Streams, nodes []*yamlv3.Node) error {
	var b bytes.Buffer
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	for _, n := range nodes {
		if err := enc.Encode(n); err != nil {
			return err
		}
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := s.Out.Write(b.Bytes())
	return err
}
