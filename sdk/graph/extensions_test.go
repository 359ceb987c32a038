package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

const extensionsSchema = `apiVersion: v1alpha1
kind: App
shortNames: [ap]
spec:
  ratio: number
  tags: ["string"]
  name: string | default="x"
status:
  big: ${schema.spec.ratio > 1}`

func extensionsResources() string {
	return "resources:\n" + cm("a", "readyWhen: ['a.data.ok == \"yes\"']",
		"s: ${string(sets.contains([1, 2], [1]))}\nm: ${string(math.greatest(1, 2))}\nf: ${string(1 < 2.0)}\nk: ${string(\"abc\".reverse())}")
}

func TestExtensionsAreListed(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc(extensionsSchema, extensionsResources())), graph.Options{})
	require.NoError(t, err)
	got := make([]string, len(g.Extensions))
	for i, e := range g.Extensions {
		got[i] = e.String()
	}
	assert.Equal(t, []string{
		`resource "a": data.f: CEL comparison across numeric types (less_int64_double)`,
		`resource "a": data.m: CEL function math.greatest`,
		`resource "a": data.s: CEL function sets.contains`,
		`resource "a": readyWhen[0]: condition without ${}`,
		`spec.schema.spec.ratio: number type (kro spells it float)`,
		`spec.schema.spec.tags: YAML list as a type`,
		`spec.schema.status.big: CEL comparison across numeric types (greater_double_int64)`,
	}, got)
}

func TestStrictRefusesExtensions(t *testing.T) {
	_, err := graph.Compile(parseRGD(t, rgdDoc(extensionsSchema, extensionsResources())), graph.Options{Strict: true})
	require.ErrorIs(t, err, graph.ErrExtension)
	assert.Contains(t, err.Error(), `spec.schema.spec.ratio: number type (kro spells it float): a fleetgraph extension kro does not support`)
	assert.NotContains(t, err.Error(), "shortNames", "kro v0.9.4 has shortNames and categories")

	_, err = graph.Compile(parseRGD(t, rgdDoc("", extensionsResources())), graph.Options{Strict: true})
	require.ErrorIs(t, err, graph.ErrExtension)
	for _, want := range []string{
		`resource "a": readyWhen[0]: condition without ${}`,
		`resource "a": data.s: ${string(sets.contains([1, 2], [1]))}: undeclared reference to 'sets'`,
		`resource "a": data.f: ${string(1 < 2.0)}: found no matching overload for '_<_'`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// Every RGD in testdata that kro would accept compiles the same under
// Strict, and lists no extension otherwise.
func TestKroRGDsHaveNoExtensions(t *testing.T) {
	for _, name := range []string{"webapp", "kro-cel-functions", "database", "external-refs"} {
		g := compileFile(t, name, graph.Options{})
		assert.Empty(t, g.Extensions, name)
		compileFile(t, name, graph.Options{Strict: true})
	}
}
