package cli_test

import (
	"os/exec"
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

func TestDiagramDrawsLevelsDependenciesAndResourceKinds(t *testing.T) {
	for _, c := range []struct{ file, format, golden string }{
		{webapp, "mermaid", "diagram-webapp-mermaid"},
		{webapp, "dot", "diagram-webapp-dot"},
		{"testdata/shapes.yaml", "mermaid", "diagram-shapes-mermaid"},
		{"testdata/shapes.yaml", "dot", "diagram-shapes-dot"},
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
	for _, flag := range []string{"kubeconfig", "context", "namespace", "cluster", "user"} {
		assert.NotNil(t, root.PersistentFlags().Lookup(flag), "--%s", flag)
	}
	assert.Equal(t, "n", root.PersistentFlags().Lookup("namespace").Shorthand)

	r := fleetgraph(t, "status", "--help")
	assert.Contains(t, r.out, "--kubeconfig")
	assert.NotContains(t, r.out, "--as-group", "credential and impersonation flags are listed by options")
	r = fleetgraph(t, "options")
	assert.Contains(t, r.out, "--as-group")
	assert.Contains(t, r.out, "--token")
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
