package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// fuzzHeapBound is the most live heap the fuzz target tolerates after any
// input: every evaluation is bounded far below it.
const fuzzHeapBound = 512 << 20

// fuzzInputBound is the longest one input may take, compile and
// evaluation together: far above every bound, so that only a missing bound
// (or a machine stalled for that long) reaches it.
const fuzzInputBound = 20 * time.Second

// hostileSeeds are expressions that each defeated an earlier bound.
var hostileSeeds = []string{
	`random.seededString(schema.spec.count, schema.spec.s)`,
	`lists.range(schema.spec.count)`,
	`schema.spec.s.replace("", schema.spec.s).replace("", schema.spec.s)`,
	`lists.range(1000).map(i, schema.spec.s).join(schema.spec.s)`,
	`cel.bind(a, [schema.spec.s, schema.spec.s, schema.spec.s], cel.bind(b, [a, a, a], cel.bind(c, [b, b, b], json.marshal([c, c, c]))))`,
	`cel.bind(a, schema.spec.s + schema.spec.s, cel.bind(b, a + a, cel.bind(c, b + b, c + c)))`,
	`cel.bind(a, schema.spec.xs + schema.spec.xs, cel.bind(b, a + a, b + b)).size()`,
	`"%s%s".format([schema.spec.s, schema.spec.xs])`,
	`strings.quote(schema.spec.s)`,
	`base64.encode(bytes(schema.spec.s))`,
	`lists.range(100).map(i, schema.spec.xs).flatten()`,
	`schema.spec.s.split("")`,
	`schema.spec.s.findAll("")`,
	`schema.spec.xs.distinct()`,
	`schema.spec.s.indexOf(schema.spec.s + "x")`,
	`sets.intersects(schema.spec.xs, schema.spec.xs.map(x, -x))`,
	`schema.spec.xs.all(x, schema.spec.xs.exists(y, y == x))`,
	`schema.spec.xs.sort()`,
	`lists.range(schema.spec.count).map(i, lists.insertAtIndex(schema.spec.xs, 0, i))`,
	`schema.spec.xs.transformMap(i, v, v).merge(schema.spec.xs.transformMap(i, v, v + 1))`,
	`json.unmarshal(schema.spec.s)`,
	`schema.spec.s.matches(schema.spec.s)`,
	`lists.setAtIndex(schema.spec.xs, schema.spec.count, 1)`,
	`schema.spec.xs.map(x, schema.spec.xs.map(y, x * y))`,
}

// FuzzEvaluate compiles a random expression as a status projection and
// evaluates it on random inputs, in the test process: it must end, with a
// value or an error, without taking the process down, and leave the heap
// bounded. Its seeds are every kind of hostile expression the guards stop
// and the expressions of the repository's corpora.
func FuzzEvaluate(f *testing.F) {
	for _, e := range hostileSeeds {
		f.Add(e, "ab", int64(1000), uint16(100))
	}
	for _, e := range corpusExpressions(f) {
		f.Add(e, "x", int64(3), uint16(3))
	}
	f.Fuzz(func(t *testing.T, expr, s string, count int64, n uint16) {
		// An input that runs past fuzzInputBound takes the worker down, so
		// that the fuzzer keeps it as a failure: a test timeout would not.
		watchdog := time.AfterFunc(fuzzInputBound, func() {
			panic(fmt.Sprintf("input ran past %s: expr %q, s of %d bytes, count %d, %d items", fuzzInputBound, expr, len(s), count, n))
		})
		defer watchdog.Stop()
		g, err := graph.Compile(fuzzRGD(t, expr), graph.Options{})
		if err != nil {
			return
		}
		xs := make([]any, n)
		for i := range xs {
			xs[i] = int64(i)
		}
		vals := graph.Values{"schema": instance("x", map[string]any{"count": count, "s": s, "xs": xs, "ys": xs})}
		ctx := graph.WithBudget(context.Background(), graph.NewBudget(g.Limits()))
		_, err = g.Status(ctx, vals)
		if err != nil {
			var ge *graph.Error
			require.True(t, errors.As(err, &ge) || strings.Contains(err.Error(), "\n"), "%v", err)
			require.Less(t, len(err.Error()), 8<<10, "messages are truncated")
		}
		require.Less(t, liveHeap(), uint64(fuzzHeapBound))
	})
}

// fuzzRGD is an RGD whose status projects expr as "out", built as JSON
// so that any expression fits.
func fuzzRGD(t *testing.T, expr string) *v1alpha1.ResourceGraphDefinition {
	doc, err := json.Marshal(map[string]any{
		"apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition", "metadata": map[string]any{"name": "fuzz"},
		"spec": map[string]any{
			"schema": map[string]any{
				"apiVersion": "v1alpha1", "kind": "Fuzz",
				"spec":   map[string]any{"count": "integer | default=1", "s": `string | default=""`, "xs": "[]integer", "ys": "[]integer"},
				"status": map[string]any{"out": "${" + expr + "}"},
			},
			"resources": []any{map[string]any{"id": "holder", "template": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "holder"}}}},
		},
	})
	require.NoError(t, err)
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, json.Unmarshal(doc, rgd))
	return rgd
}

// liveHeap reads the bytes of live heap objects, cheaply.
func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

var exprPattern = regexp.MustCompile(`\$\{([^{}]+)\}`)

// corpusExpressions are the ${} expressions of the repository's corpora.
func corpusExpressions(f *testing.F) []string {
	var out []string
	seen := map[string]bool{}
	for _, dir := range []string{"testdata", filepath.Join("..", "..", "hack", "krodiff", "testdata", "corpus")} {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		require.NoError(f, err)
		for _, path := range files {
			raw, err := os.ReadFile(path)
			require.NoError(f, err)
			for _, m := range exprPattern.FindAllStringSubmatch(string(raw), -1) {
				if !seen[m[1]] {
					seen[m[1]] = true
					out = append(out, m[1])
				}
			}
		}
	}
	return out
}
