package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli"
)

const webapp = "../../../../examples/quickstart/webapp.yaml"

// validate reports each problem at the line to edit, with the resource id,
// field path and expression, skips documents of other kinds, and exits 1.
func TestValidateReportsEachProblemAtItsLine(t *testing.T) {
	r := fleetgraph(t, "validate", "testdata/broken.yaml")
	assert.Equal(t, cli.ExitFailed, r.code)
	golden(t, "validate-broken", r.String())
}

// validate reports every problem it can find in one pass: the loader's
// (every unknown field), the structure's and the expressions' of every
// sound resource, a misuse of fleet at the field that reads it; each at
// its line, with the resource and the field path.
func TestValidateReportsEveryProblemInOnePass(t *testing.T) {
	r := fleetgraph(t, "validate", "testdata/one-pass.yaml")
	assert.Equal(t, cli.ExitFailed, r.code)
	golden(t, "validate-one-pass", r.String())
}

// Input without an RGD is one clear error, and nothing else is printed.
func TestValidateOfNothingIsOneError(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	for _, c := range []struct {
		args         []string
		stdin, error string
	}{
		{[]string{"-"}, "", "no ResourceGraphDefinition found in -: the input is empty"},
		{[]string{"-"}, "\n---\n# nothing\n---\n", "no ResourceGraphDefinition found in -: the input is empty"},
		{[]string{empty}, "", "no ResourceGraphDefinition found in " + empty + ": the input is empty"},
		{[]string{"-"}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "no ResourceGraphDefinition found in - (1 document of other kinds skipped)"},
		{[]string{"testdata/crds"}, "", "no ResourceGraphDefinition found in testdata/crds (1 document of other kinds skipped)"},
	} {
		r := run(t, "fleetgraph", c.stdin, append([]string{"validate"}, c.args...)...)
		assert.Equal(t, cli.ExitFailed, r.code, r.String())
		assert.Empty(t, r.out, "%v", c.args)
		assert.Equal(t, "error: "+c.error+"\n", r.err, "%v", c.args)
	}
}

func TestValidateAcceptsTheQuickstartGraph(t *testing.T) {
	r := fleetgraph(t, "validate", webapp)
	assert.Equal(t, cli.ExitOK, r.code, r.String())
	golden(t, "validate-webapp", r.String())
}

// Standard input, as in `kubectl get rgd x -o yaml | fleetgraph validate -`.
func TestValidateReadsStandardInput(t *testing.T) {
	r := run(t, "fleetgraph", "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: x}\nspec:\n  schema: {apiVersion: v1, kind: X, spec: {size: intger}}\n", "validate", "-")
	assert.Equal(t, cli.ExitFailed, r.code)
	assert.Contains(t, r.out, "-:5: spec.schema.spec.size: unknown type")
}

// Without --strict an extension is a note; with it, an error naming it.
func TestValidateStrictRefusesExtensionsNamingThem(t *testing.T) {
	r := fleetgraph(t, "validate", "testdata/extensions.yaml")
	assert.Equal(t, cli.ExitOK, r.code, r.String())
	golden(t, "validate-extensions", r.String())

	r = fleetgraph(t, "validate", "--strict", "testdata/extensions.yaml")
	assert.Equal(t, cli.ExitFailed, r.code)
	golden(t, "validate-extensions-strict", r.String())
}

// A custom kind is not type-checked offline (a warning says so); its CRD
// given, the template is checked against it.
func TestValidateTypeChecksCustomKindsAgainstTheirCRDs(t *testing.T) {
	r := fleetgraph(t, "validate", "testdata/custom-kind.yaml")
	assert.Equal(t, cli.ExitOK, r.code, r.String())
	assert.Contains(t, r.out, "custom-kind.yaml:16: warning: resource \"widget\": example.test/v1 Widget is not a kind built into Kubernetes")

	r = fleetgraph(t, "validate", "--schemas-from", "testdata/crds", "testdata/custom-kind.yaml")
	assert.Equal(t, cli.ExitFailed, r.code)
	golden(t, "validate-custom-kind-crds", r.String())

	// With --schemas-from, a kind no source knows is an error.
	r = fleetgraph(t, "validate", "--schemas-from", "testdata/crds/widgets.yaml", "testdata/extensions.yaml", "testdata/shapes.yaml")
	assert.Equal(t, cli.ExitOK, r.code, "built-in kinds are still known: %s", r)
}

// Built-in kinds are typed offline from the snapshot: a wrong field of a
// Deployment is found without a cluster.
func TestValidateTypeChecksBuiltinKindsOffline(t *testing.T) {
	r := fleetgraph(t, "validate", "-o", "json", "testdata/broken.yaml")
	assert.Equal(t, cli.ExitFailed, r.code)
	assert.Contains(t, r.out, `"message": "expression returns string but the field is int"`)
	assert.Contains(t, r.out, `"path": "spec.template.spec.containers[0].ports[0].containerPort"`)
}

func TestValidateFailsWhenNothingIsFound(t *testing.T) {
	r := fleetgraph(t, "validate", "testdata/crds")
	assert.Equal(t, cli.ExitFailed, r.code)
	assert.Contains(t, r.err, "no ResourceGraphDefinition found in testdata/crds")

	r = fleetgraph(t, "validate", "testdata/no-such-file.yaml")
	assert.Equal(t, cli.ExitError, r.code)
}

func TestGenerateCRDPrintsWhatTheHubFansOut(t *testing.T) {
	r := fleetgraph(t, "generate", "crd", webapp)
	assert.Equal(t, cli.ExitOK, r.code, r.String())
	golden(t, "generate-crd-webapp", r.String())
}

func TestGenerateInstanceFillsDefaultsAndRequiredFields(t *testing.T) {
	r := fleetgraph(t, "generate", "instance", webapp, "-n", "team-a", "--instance-name", "shop")
	assert.Equal(t, cli.ExitOK, r.code, r.String())
	golden(t, "generate-instance-webapp", r.String())
}

func TestGenerateRefusesAnInvalidRGD(t *testing.T) {
	r := fleetgraph(t, "generate", "crd", "testdata/broken.yaml", "--name", "shop")
	assert.Equal(t, cli.ExitFailed, r.code)
	assert.Contains(t, r.err, "broken.yaml:27: resource \"deployment\": spec.replicas")
}

// A diagram draws each level's resources, the edges between them, each
// resource's kind and options (what a forEach ranges over, includeWhen,
// externalRef) and, for a hub graph, groups each level's resources by
// the cluster they are written in.
func TestDiagramDrawsLevelsDependenciesAndResourceKinds(t *testing.T) {
	for _, c := range []struct{ file, format, golden string }{
		{webapp, "mermaid", "diagram-webapp-mermaid"},
		{webapp, "dot", "diagram-webapp-dot"},
		{"testdata/shapes.yaml", "mermaid", "diagram-shapes-mermaid"},
		{"testdata/shapes.yaml", "dot", "diagram-shapes-dot"},
		{"testdata/hub-graph.yaml", "mermaid", "diagram-hub-graph-mermaid"},
		{"testdata/hub-graph.yaml", "dot", "diagram-hub-graph-dot"},
	} {
		t.Run(c.golden, func(t *testing.T) {
			r := fleetgraph(t, "diagram", c.file, "-o", c.format)
			assert.Equal(t, cli.ExitOK, r.code, r.String())
			golden(t, c.golden, r.String())
		})
	}
}

// -o svg runs Graphviz where it is installed and says how to get it where
// it is not; both are checked, whichever this machine is.
func TestDiagramSVGNeedsGraphviz(t *testing.T) {
	r := fleetgraph(t, "diagram", webapp, "-o", "svg")
	if _, err := exec.LookPath("dot"); err != nil {
		assert.Equal(t, cli.ExitError, r.code)
		assert.Contains(t, r.err, "Graphviz's dot command is not installed")
		return
	}
	assert.Equal(t, cli.ExitOK, r.code, r.err)
	assert.Contains(t, r.out, "<svg")
	assert.Contains(t, r.out, "apps/v1 Deployment")
}

// Named kubectl-fleetgraph, the command presents itself as the kubectl
// plugin it then is.
func TestKubectlPluginNameShowsInUsage(t *testing.T) {
	assert.Equal(t, "kubectl fleetgraph", cli.CommandName("/usr/local/bin/kubectl-fleetgraph"))
	assert.Equal(t, "fleetgraph", cli.CommandName("/go/bin/fleetgraph"))
	r := run(t, "/usr/local/bin/kubectl-fleetgraph", "", "validate", "--help")
	assert.Equal(t, cli.ExitOK, r.code)
	assert.Contains(t, r.out, "kubectl fleetgraph validate FILE|DIR|- ...")
	assert.Contains(t, r.out, "  kubectl fleetgraph validate rgds/")
	r = fleetgraph(t, "--help")
	assert.Contains(t, r.out, "fleetgraph [command]")
	assert.NotContains(t, r.out, "kubectl fleetgraph")
}

// Every command has help with an example, and kubectl's connection flags.
func TestEveryCommandHasHelpWithAnExample(t *testing.T) {
	root := cli.NewCommand("fleetgraph", cli.Streams{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "completion" || c.Parent() != nil && c.Parent().Name() == "completion" || c.Name() == "help" {
			return
		}
		assert.NotEmpty(t, c.Short, "%s has no short help", c.CommandPath())
		assert.NotEmpty(t, c.Example, "%s has no example", c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)

	r := fleetgraph(t, "status", "--help")
	assert.Contains(t, r.out, "--kubeconfig")
	assert.NotContains(t, r.out, "--as-group", "credential and impersonation flags are listed by options")
	r = fleetgraph(t, "options")
	assert.Contains(t, r.out, "--as-group")
	assert.Contains(t, r.out, "--token")
	assert.Contains(t, r.out, "--kubeconfig-cluster")
}

// Each command shows the flags it uses: the commands that reach the hub
// kubectl's connection flags, the offline ones only --kubeconfig and
// --context (for --schemas-from cluster) and -n where it names the
// instance's namespace. --cluster always names a fleet cluster; the
// kubeconfig's cluster entry is --kubeconfig-cluster.
func TestEachCommandShowsTheFlagsItUses(t *testing.T) {
	online := []string{"kubeconfig", "context", "namespace", "kubeconfig-cluster", "user", "request-timeout"}
	for _, c := range []struct {
		args       []string
		want, none []string
	}{
		{[]string{"status"}, online, []string{"cluster"}},
		{[]string{"rollout", "status"}, online, []string{"cluster"}},
		{[]string{"rollout", "hold"}, append([]string{"cluster", "selector"}, online...), nil},
		{[]string{"rollout", "release"}, append([]string{"cluster", "selector"}, online...), nil},
		{[]string{"validate"}, []string{"kubeconfig", "context"}, []string{"namespace", "kubeconfig-cluster", "cluster", "user", "request-timeout", "server"}},
		{[]string{"diagram"}, []string{"kubeconfig", "context"}, []string{"namespace", "kubeconfig-cluster", "cluster", "user", "request-timeout", "server"}},
		{[]string{"generate", "crd"}, []string{"kubeconfig", "context"}, []string{"namespace", "kubeconfig-cluster", "cluster", "user", "request-timeout", "server"}},
		{[]string{"generate", "instance"}, []string{"kubeconfig", "context", "namespace"}, []string{"kubeconfig-cluster", "cluster", "user", "request-timeout", "server"}},
		{[]string{"version"}, nil, []string{"kubeconfig", "context", "namespace"}},
	} {
		r := fleetgraph(t, append(c.args, "--help")...)
		require.Equal(t, cli.ExitOK, r.code, r.String())
		for _, f := range c.want {
			assert.Regexp(t, `(?m)^\s+(-\w, )?--`+f+` `, r.out, "%v shows --%s", c.args, f)
		}
		for _, f := range c.none {
			assert.NotRegexp(t, `(?m)^\s+(-\w, )?--`+f+` `, r.out, "%v does not show --%s", c.args, f)
		}
	}
	r := fleetgraph(t, "validate", "--user", "x", "testdata/shapes.yaml")
	assert.Equal(t, cli.ExitError, r.code)
	assert.Contains(t, r.err, "unknown flag: --user")
}

// Named kubectl_complete-fleetgraph, the command answers kubectl's
// completion of `kubectl fleetgraph ...`: kubectl runs it with the words
// after the plugin's name.
func TestKubectlCompletesThePlugin(t *testing.T) {
	completer := "/usr/local/bin/" + cli.CompleterName
	assert.Equal(t, "kubectl fleetgraph", cli.CommandName(completer))
	r := run(t, completer, "", "rollout", "h")
	assert.Equal(t, cli.ExitOK, r.code, r.String())
	assert.Equal(t, "hold\tPin clusters to the revision each serves (spec.holds)\n:4\n", r.out)
	r = run(t, completer, "", "")
	assert.Contains(t, r.out, "validate\t")
	assert.Contains(t, r.out, "rollout\t")
	r = run(t, completer, "", "status", "--kubeconfig-c")
	assert.Contains(t, r.out, "--kubeconfig-cluster\t")
}

// Shell completion is cobra's, for every shell it knows.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := fleetgraph(t, "completion", shell)
		require.Equal(t, cli.ExitOK, r.code, shell)
		assert.True(t, strings.Contains(r.out, "fleetgraph"), shell)
	}
	r := fleetgraph(t, "__complete", "diagram", "x.yaml", "-o", "")
	assert.Contains(t, r.out, "mermaid\ndot\nsvg\n")
}

// What the compiler serves, as kro does, but warns about (two resources
// rendering one object) is a warning line naming the resource; the RGD
// stays valid.
func TestValidatePrintsCompileWarnings(t *testing.T) {
	rgd := `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: twice}
spec:
  schema: {apiVersion: v1alpha1, kind: Twice, spec: {name: string}}
  resources:
    - id: first
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${schema.spec.name}"}, data: {a: "1"}}
    - id: second
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${schema.spec.name}"}, data: {b: "2"}}
`
	r := run(t, "fleetgraph", rgd, "validate", "-")
	assert.Equal(t, cli.ExitOK, r.code, r.String())
	assert.Regexp(t, `-:10: warning: resource "second": metadata\.name: \$\{schema\.spec\.name\}: .*first`, r.out)
}
