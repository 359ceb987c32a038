package graph_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// loadRGD decodes testdata/<name>.yaml strictly, as the API server would.
func loadRGD(t testing.TB, name string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	require.NoError(t, err)
	return parseRGD(t, string(raw))
}

func parseRGD(t testing.TB, doc string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), rgd))
	return rgd
}

func compileFile(t testing.TB, name string, opts graph.Options) *graph.Graph {
	t.Helper()
	g, err := graph.Compile(loadRGD(t, name), opts)
	require.NoError(t, err)
	return g
}

// instance returns the Values entry for an instance with the given spec.
func instance(name string, spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "kro.run/v1alpha1",
		"kind":       "Test",
		"metadata":   map[string]any{"name": name, "namespace": "default"},
		"spec":       spec,
	}
}

func ids(nodes []*graph.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

func levelIDs(levels [][]*graph.Node) [][]string {
	out := make([][]string, len(levels))
	for i, l := range levels {
		out[i] = ids(l)
	}
	return out
}

var typedResolver graph.StaticResolver

// typedOptions compiles against real Kubernetes schemas (core, apps and
// batch kinds), resolved once per test binary.
func typedOptions(t testing.TB) graph.Options {
	if typedResolver == nil {
		typedResolver = staticResolver(t)
	}
	return graph.Options{Resolver: typedResolver}
}
