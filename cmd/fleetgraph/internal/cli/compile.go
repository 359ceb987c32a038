package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/manifest"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// compileFlags are the flags of the commands that compile one file's RGDs
// to show something of them (generate, diagram).
type compileFlags struct {
	validateOptions
	name string
}

func (f *compileFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.name, "name", "", "the RGD to use when the file holds several (default: all, or the only one)")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "refuse fleetgraph extensions, as kro v0.9.4 would")
	cmd.Flags().StringArrayVar(&f.schemasFrom, "schemas-from", nil, `schemas of child kinds: a CRD directory or file, a kubeconfig file, or "cluster" (repeatable)`)
	f.bindInput(cmd)
}

// compiled is one RGD of a file and its graph.
type compiled struct {
	doc   *manifest.Document
	graph *graph.Graph
}

// compileFile compiles the RGDs of path (--name picks one); any that does
// not compile fails the command with its diagnostics.
func (f *compileFlags) compileFile(g *globals, path string) ([]compiled, error) {
	in, err := f.inputOptions(g)
	if err != nil {
		return nil, err
	}
	res, err := f.resolver(g, in)
	if err != nil {
		return nil, err
	}
	set, err := manifest.Read(in, path)
	if err != nil {
		return nil, inputError(err)
	}
	var out []compiled
	var problems []string
	for _, d := range set.Documents {
		if f.name != "" && (d.RGD == nil || d.RGD.Name != f.name) {
			continue
		}
		r, gr := f.validate(d, res)
		for _, e := range r.Errors {
			problems = append(problems, fmt.Sprintf("%s:%d: %s", d.File, e.Line, e))
		}
		if gr != nil {
			out = append(out, compiled{doc: d, graph: gr})
		}
	}
	if len(problems) > 0 {
		return nil, &exitError{code: ExitFailed, err: errors.New(strings.Join(problems, "\n"))}
	}
	if len(out) == 0 {
		what := "no ResourceGraphDefinition"
		if f.name != "" {
			what = fmt.Sprintf("no ResourceGraphDefinition named %q (found: %s)", f.name, strings.Join(set.Names(), ", "))
		}
		return nil, failed("%s in %s", what, path)
	}
	return out, nil
}

func checkOutput(got string, want ...string) error {
	if !slices.Contains(want, got) {
		return fmt.Errorf("unknown output format %q: want %s", got, strings.Join(want, ", "))
	}
	return nil
}
