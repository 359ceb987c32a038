package graph_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// evalStatus compiles an RGD whose status projects expr as "out" and
// evaluates it against an instance with the given spec. A status field must
// read schema or a resource (as in kro), so expr is bound inside a
// cel.bind over schema.
func evalStatus(t *testing.T, expr string, opts graph.Options) (any, error) {
	t.Helper()
	expr = "${cel.bind(instance, schema, " + strings.TrimSuffix(strings.TrimPrefix(expr, "${"), "}") + ")}"
	schema := fmt.Sprintf("apiVersion: v1alpha1\nkind: App\nspec:\n  name: string | default=\"app\"\nstatus:\n  out: '%s'", expr)
	g, err := graph.Compile(parseRGD(t, rgdDoc(schema, "resources:\n"+cm("a", "", ""))), opts)
	if err != nil {
		return nil, err
	}
	inst := instance("demo", map[string]any{"name": "hello world"})
	inst["metadata"].(map[string]any)["uid"] = "uid-1234"
	out, err := g.Status(context.Background(), graph.Values{"schema": inst})
	return out["out"], err
}

// The expected values below were computed with an independent Python
// implementation of kro v0.9.4's algorithms (pkg/cel/library/random.go and
// hash.go, read in the Go module cache): sha256 of the seed, four bytes per
// character modulo "0-9a-z" wrapping every eight characters; the first
// eight bytes modulo (max-min) for seededInt.
func TestKroCELFunctionsMatchKro(t *testing.T) {
	tests := map[string]struct {
		expr string
		want any
	}{
		"seededString":                    {"${random.seededString(10, schema.metadata.uid)}", "h8pr9j4jh8"},
		"seededString wraps every 8":      {`${random.seededString(20, "abc")}`, "r6qfjs5dr6qfjs5dr6qf"},
		"seededString empty seed":         {`${random.seededString(1, "")}`, "e"},
		"seededInt":                       {"${random.seededInt(30000, 32768, schema.metadata.uid)}", int64(31108)},
		"seededInt negative range":        {`${random.seededInt(-5, 5, "abc")}`, int64(-1)},
		"fnv64a":                          {`${base64.encode(hash.fnv64a(schema.spec.name))}`, "d5pl5wI80uc="},
		"sha256":                          {`${base64.encode(hash.sha256(schema.spec.name))}`, "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek="},
		"md5":                             {`${base64.encode(hash.md5(schema.spec.name))}`, "XrY7u+Ae7tCTyyK7j1rNww=="},
		"json.unmarshal":                  {`${json.unmarshal("{\"a\": {\"b\": [1, true]}}").a.b}`, []any{1.0, true}},
		"json.unmarshal number":           {`${json.unmarshal("42")}`, 42.0},
		"json.marshal sorts keys":         {`${json.marshal({"b": 1, "a": [1.5, "x", null, b"hi"]})}`, `{"a":[1.5,"x",null,"aGk="],"b":1}`},
		"json.marshal timestamp":          {`${json.marshal([timestamp("2024-01-02T03:04:05.123Z"), duration("90s")])}`, `["2024-01-02T03:04:05Z","1m30s"]`},
		"json.marshal schema":             {`${json.marshal(schema.spec)}`, `{"name":"hello world"}`},
		"merge":                           {`${{"a": 1, "b": 2}.merge({"b": 3, "c": 4})}`, map[string]any{"a": int64(1), "b": int64(3), "c": int64(4)}},
		"merge empty":                     {`${{"a": "x"}.merge({})}`, map[string]any{"a": "x"}},
		"deepMerge (kro v0.9.4)":          {`${{"a": {"x": 1, "l": [1]}, "b": 1}.deepMerge({"a": {"y": 2, "l": [2]}, "c": {"z": 3}})}`, map[string]any{"a": map[string]any{"x": int64(1), "y": int64(2), "l": []any{int64(2)}}, "b": int64(1), "c": map[string]any{"z": int64(3)}}},
		"deepMerge overwrites":            {`${{"a": {"x": 1}}.deepMerge({"a": {"x": 9}})}`, map[string]any{"a": map[string]any{"x": int64(9)}}},
		"deepMerge scalar over map":       {`${{"a": {"x": 1}}.deepMerge({"a": "s"})}`, map[string]any{"a": "s"}},
		"deepMerge map over scalar":       {`${{"a": "s"}.deepMerge({"a": {"x": 1}})}`, map[string]any{"a": map[string]any{"x": int64(1)}}},
		"deepMerge empty sides":           {`${[{}.deepMerge({"a": 1}), {"a": 1}.deepMerge({})]}`, []any{map[string]any{"a": int64(1)}, map[string]any{"a": int64(1)}}},
		"deepMerge of the instance":       {`${json.marshal(schema.metadata.deepMerge({"labels": {"x": "y"}}))}`, `{"labels":{"x":"y"},"name":"demo","namespace":"default","uid":"uid-1234"}`},
		"json.encode (cel-go v0.31)":      {`${json.encode({"b": 1, "a": ["<"]})}`, `{"a":["\u003c"],"b":1}`},
		"setAtIndex":                      {`${lists.setAtIndex([1, 2, 3], 1, 99)}`, []any{int64(1), int64(99), int64(3)}},
		"insertAtIndex front":             {`${lists.insertAtIndex([1, 2, 3], 0, 99)}`, []any{int64(99), int64(1), int64(2), int64(3)}},
		"insertAtIndex appends":           {`${lists.insertAtIndex([1, 2, 3], 3, 99)}`, []any{int64(1), int64(2), int64(3), int64(99)}},
		"removeAtIndex":                   {`${lists.removeAtIndex(["a", "b", "c"], 1)}`, []any{"a", "c"}},
		"removeAtIndex last":              {`${lists.removeAtIndex(["a", "b", "c"], 2)}`, []any{"a", "b"}},
		"strings reverse":                 {`${"abc".reverse()}`, "cba"},
		"lists sum (cel-go lists v3)":     {`${string([100, 200, 300].sum())}`, "600"},
		"timestamps render to the second": {`${timestamp("2024-01-02T03:04:05.123Z")}`, "2024-01-02T03:04:05Z"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := evalStatus(t, tt.expr, graph.Options{Strict: true})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// Error cases fail at evaluation, as in kro, with kro's messages.
func TestKroCELFunctionErrors(t *testing.T) {
	tests := map[string]struct{ expr, want string }{
		"seededString zero length": {`${random.seededString(0, "x")}`, "random.seededString length must be positive"},
		"seededInt empty range":    {`${random.seededInt(5, 5, "x")}`, "random.seededInt min must be less than max"},
		"json.unmarshal bad JSON":  {`${json.unmarshal("{")}`, "json.unmarshal failed to parse JSON"},
		"setAtIndex out of range":  {`${lists.setAtIndex([1], 1, 2)}`, "lists.setAtIndex: index 1 out of bounds [0, 1)"},
		"insertAtIndex negative":   {`${lists.insertAtIndex([1], -1, 2)}`, "lists.insertAtIndex: index -1 out of bounds [0, 1]"},
		"removeAtIndex empty":      {`${lists.removeAtIndex([], 0)}`, "lists.removeAtIndex: index 0 out of bounds [0, 0)"},
		"deepMerge of a list":      {`${dyn([1]).deepMerge({})}`, "no such overload"},
		"deepMerge with a string":  {`${{"a": 1}.deepMerge(dyn("x"))}`, "no such overload"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := evalStatus(t, tt.expr, graph.Options{})
			require.ErrorIs(t, err, graph.ErrEvaluation)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// Type errors are compile errors: merge needs maps of one value type,
// setAtIndex a value of the list's element type.
func TestKroCELFunctionTypeErrors(t *testing.T) {
	for _, expr := range []string{
		`${{"a": 1}.merge({"b": "x"})}`,
		`${lists.setAtIndex([1, 2], 0, "x")}`,
		`${random.seededString("10", "x")}`,
		`${hash.md5(1)}`,
	} {
		_, err := evalStatus(t, expr, graph.Options{})
		assert.ErrorIs(t, err, graph.ErrExpression, expr)
	}
}

// kro's own example of its CEL functions compiles unchanged (copied from
// kro v0.9.4 examples/kubernetes/cel-functions/rg.yaml).
func TestKroCELFunctionsExampleCompiles(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "kro-cel-functions.yaml"))
	require.NoError(t, err)
	for _, opts := range []graph.Options{{Strict: true}, typedOptions(t)} {
		_, err = graph.Compile(parseRGD(t, string(raw)), opts)
		require.NoError(t, err)
	}
}
