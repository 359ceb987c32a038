package cli

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/input"
	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/manifest"
	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/schemas"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

type validateOptions struct {
	strict      bool
	schemasFrom []string
	output      string
	// maxBytes and followSymlinks are --max-bytes and --follow-symlinks
	// (input.Options).
	maxBytes       string
	followSymlinks bool
}

// bindInput binds the flags that bound what the command reads.
func (o *validateOptions) bindInput(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.maxBytes, "max-bytes", "16Mi", "the largest file, and standard input, read (a quantity: 64Mi, 1Gi)")
	cmd.Flags().BoolVar(&o.followSymlinks, "follow-symlinks", false, "follow symbolic links in a directory that lead out of it (the target must be a regular file)")
}

// inputOptions are the bounds of what the command reads.
func (o *validateOptions) inputOptions(g *globals) (input.Options, error) {
	q, err := resource.ParseQuantity(o.maxBytes)
	if err != nil || q.Sign() <= 0 {
		return input.Options{}, fmt.Errorf("--max-bytes %q: want a positive quantity of bytes such as 16Mi", o.maxBytes)
	}
	return input.Options{MaxBytes: q.Value(), FollowSymlinks: o.followSymlinks, Stdin: g.streams.In}, nil
}

// inputError says, of what input refused, which flag lets it through.
func inputError(err error) error {
	switch {
	case errors.Is(err, input.ErrTooLarge):
		return fmt.Errorf("%w (--max-bytes raises it)", err)
	case errors.Is(err, input.ErrOutsideTree):
		return fmt.Errorf("%w (--follow-symlinks follows it)", err)
	}
	return err
}

func newValidateCommand(g *globals, name string) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate FILE|DIR|- ...",
		Short: "Compile ResourceGraphDefinitions with the hub's compiler, offline",
		Long: `Compile every ResourceGraphDefinition in the files (multi-document YAML or
JSON, "-" for standard input) and directories (their .yaml, .yml and .json
files, recursively) with the compiler the hub runs. Documents of other kinds
are skipped. Each problem is one line:

  FILE:LINE: resource ID: FIELD PATH: EXPRESSION: MESSAGE

Without a cluster: child kinds built into Kubernetes ` + schemas.KubernetesVersion + ` are typed from
a snapshot of its OpenAPI, so their templates and the expressions that read
them are type-checked as the hub does; other kinds are typed dynamically, as
the hub types kinds it does not serve, and each is named in a warning.
--schemas-from gives their schemas: a directory or file of CRD manifests, a
kubeconfig file, or "cluster" for the cluster of --kubeconfig/--context
(read through its OpenAPI, as the hub reads its own). With --schemas-from a
kind none of the sources knows is an error, as on a spoke that lacks it.

--strict compiles as kro v0.9.4 does: every fleetgraph extension (CEL
libraries kro lacks, the number type, ...) is an error naming it. Without
it, each use is listed as a note.

Exit code 1 when any RGD is invalid or none was found, 2 when a file cannot
be read.`,
		Example: example(name, `  # Every RGD of a directory, as CI would
  fleetgraph validate rgds/

  # Portable to kro: refuse fleetgraph extensions
  fleetgraph validate --strict webapp.yaml

  # Type-check custom child kinds against their CRDs, or a live cluster
  fleetgraph validate --schemas-from crds/ app.yaml
  fleetgraph validate --schemas-from cluster --context prod app.yaml`),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(g, args) },
	}
	g.bindKubeconfig(cmd, false)
	o.bindInput(cmd)
	cmd.Flags().BoolVar(&o.strict, "strict", false, "refuse fleetgraph extensions, as kro v0.9.4 would")
	cmd.Flags().StringArrayVar(&o.schemasFrom, "schemas-from", nil, `schemas of child kinds: a CRD directory or file, a kubeconfig file, or "cluster" (repeatable)`)
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion("text", "json", "yaml"))
	_ = cmd.RegisterFlagCompletionFunc("schemas-from", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"cluster"}, cobra.ShellCompDirectiveDefault
	})
	return cmd
}

func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

func (o *validateOptions) run(g *globals, args []string) error {
	if !slices.Contains([]string{"text", "json", "yaml"}, o.output) {
		return fmt.Errorf("unknown output format %q: want text, json or yaml", o.output)
	}
	in, err := o.inputOptions(g)
	if err != nil {
		return err
	}
	res, err := o.resolver(g, in)
	if err != nil {
		return err
	}
	report := &validationReport{}
	set, err := manifest.Each(in, args, func(d *manifest.Document) error {
		r, _ := o.validate(d, res)
		report.Results = append(report.Results, r)
		return nil
	})
	if err != nil {
		return inputError(err)
	}
	report.Files, report.Skipped = set.Files, set.Skipped
	for _, err := range set.NotYAML {
		report.NotYAML = append(report.NotYAML, err.Error())
	}
	if err := report.write(g.streams, o.output); err != nil {
		return err
	}
	switch {
	case len(report.Results) == 0:
		return failed("%s", nothingFound(set, args))
	case report.invalid() > 0:
		return &exitError{code: ExitFailed, err: errors.New("")}
	}
	return nil
}

// nothingFound says that args hold no RGD, and what they hold instead.
func nothingFound(set *manifest.Set, args []string) string {
	msg := "no ResourceGraphDefinition found in " + strings.Join(args, ", ")
	switch {
	case set.Files == 0:
		return msg + ": no .yaml, .yml or .json file"
	case set.Skipped > 0:
		return msg + fmt.Sprintf(" (%s of other kinds skipped)", plural(set.Skipped, "document"))
	case set.Empty == set.Files && len(set.NotYAML) == 0:
		if set.Files == 1 {
			return msg + ": the input is empty"
		}
		return msg + ": every file is empty"
	}
	return msg
}

// resolver builds the schema sources --schemas-from names; with none, the
// built-in kinds' snapshot.
func (o *validateOptions) resolver(g *globals, in input.Options) (schemas.Resolver, error) {
	var crdPaths []string
	var chain schemas.Chain
	live := false
	for _, src := range o.schemasFrom {
		r, err := liveSource(g, in, src)
		if err != nil {
			return nil, err
		}
		if r == nil {
			crdPaths = append(crdPaths, src)
			continue
		}
		chain, live = append(chain, r), true
	}
	if len(crdPaths) > 0 {
		crds, err := schemas.ReadCRDs(in, crdPaths...)
		if err != nil {
			return nil, fmt.Errorf("--schemas-from: %w", inputError(err))
		}
		docs, err := schemas.FromCRDs(crds)
		if err != nil {
			return nil, fmt.Errorf("--schemas-from: %w", err)
		}
		chain = append(schemas.Chain{resolver.New(docs, resolver.Options{})}, chain...)
	}
	if !live {
		builtin, err := schemas.Offline(nil)
		if err != nil {
			return nil, err
		}
		chain = append(chain, builtin)
	}
	return chain, nil
}

// liveSource returns a resolver of the cluster src names ("cluster", or a
// kubeconfig file), or nil when src holds CRD manifests.
func liveSource(g *globals, in input.Options, src string) (schemas.Resolver, error) {
	if src == "cluster" {
		cfg, err := g.restConfig()
		if err != nil {
			return nil, err
		}
		return resolver.NewForConfig(cfg, resolver.Options{})
	}
	info, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("--schemas-from: %w", err)
	}
	if info.IsDir() {
		return nil, nil
	}
	raw, err := input.ReadFile(src, in.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("--schemas-from: %w", inputError(err))
	}
	kc, err := clientcmd.Load(raw)
	if err != nil || len(kc.Clusters) == 0 {
		return nil, nil // not a kubeconfig: CRD manifests
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*kc, g.overrides.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--schemas-from %s: %w", src, err)
	}
	return resolver.NewForConfig(cfg, resolver.Options{})
}

// validate compiles one document; the graph is nil when it is invalid.
func (o *validateOptions) validate(d *manifest.Document, res schemas.Resolver) (validationResult, *graph.Graph) {
	r := validationResult{File: d.File, Line: d.Line}
	for _, e := range d.Errs {
		r.Errors = append(r.Errors, loadDiagnostic(d, e))
	}
	if d.RGD == nil {
		return r, nil
	}
	r.Name = d.RGD.Name
	rec := &schemas.Recorder{Resolver: res}
	// AllErrors: every problem the compiler can find, in one pass.
	g, err := graph.Compile(d.RGD, graph.Options{Resolver: rec, DynamicUnknownKinds: len(o.schemasFrom) == 0, Strict: o.strict, AllErrors: true})
	for _, e := range flatten(err) {
		r.Errors = append(r.Errors, diagnosticOf(d, e))
	}
	slices.SortStableFunc(r.Errors, func(a, b diagnostic) int { return a.Line - b.Line })
	if g == nil || len(d.Errs) > 0 {
		return r, nil
	}
	r.Valid = true
	r.Resources = len(g.Nodes)
	for _, n := range g.Nodes {
		if rec.Unknown(n.GVK) {
			r.Warnings = append(r.Warnings, diagnostic{
				Line: d.LineOf(n.ID, kindPath(n)), Resource: n.ID,
				Message: fmt.Sprintf("%s is not a kind built into Kubernetes %s: its template and the expressions that read it are not type-checked (give its CRD with --schemas-from)", gvkString(n), schemas.KubernetesVersion),
			})
		}
	}
	for _, w := range g.Warnings {
		r.Warnings = append(r.Warnings, diagnostic{Line: d.LineOf(w.ResourceID, w.Path), Resource: w.ResourceID, Path: w.Path, Expression: w.Expression, Message: w.Message})
	}
	slices.SortStableFunc(r.Warnings, func(a, b diagnostic) int { return a.Line - b.Line })
	for _, x := range g.Extensions {
		r.Extensions = append(r.Extensions, diagnostic{Line: d.LineOf(x.ResourceID, x.Path), Resource: x.ResourceID, Path: x.Path, Message: x.Feature})
	}
	slices.SortStableFunc(r.Extensions, func(a, b diagnostic) int { return a.Line - b.Line })
	return r, g
}

func kindPath(n *graph.Node) string {
	if n.External {
		return "externalRef.kind"
	}
	return "kind"
}

func gvkString(n *graph.Node) string {
	return n.GVK.GroupVersion().String() + " " + n.GVK.Kind
}

// flatten lists the errors err joins.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		if _, isGraph := err.(*graph.Error); !isGraph {
			var out []error
			for _, e := range j.Unwrap() {
				out = append(out, flatten(e)...)
			}
			return out
		}
	}
	return []error{err}
}

// loadDiagnostic is a refusal of the strict loader, pointed at the
// resource when the field is inside one.
func loadDiagnostic(d *manifest.Document, e *v1alpha1.LoadError) diagnostic {
	diag := diagnostic{Line: e.Line, Path: e.Field, Message: e.Err.Error()}
	if m := resourceField.FindStringSubmatch(e.Field); m != nil {
		i, _ := strconv.Atoi(m[1])
		if id := d.ResourceID(i); id != "" {
			diag.Resource, diag.Path = id, m[2]
		}
	}
	return diag
}

var resourceField = regexp.MustCompile(`^spec\.resources\[(\d+)\]\.(.+)$`)

func diagnosticOf(d *manifest.Document, err error) diagnostic {
	var ge *graph.Error
	if !errors.As(err, &ge) {
		return diagnostic{Line: d.Line, Message: err.Error()}
	}
	msg := ""
	if ge.Err != nil {
		msg = ge.Err.Error()
	}
	return diagnostic{Line: d.LineOf(ge.ResourceID, ge.Path), Resource: ge.ResourceID, Path: ge.Path, Expression: ge.Expression, Message: msg}
}
