package graph_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// hostileSchema is the instance schema of the hostile-expression tests: a
// number, a string and two lists a tenant controls.
const hostileSchema = `apiVersion: v1alpha1
kind: App
spec:
  count: integer | default=1
  s: string | default=""
  xs: "[]integer"
  ys: "[]integer"`

// quoteYAML quotes s as a YAML single-quoted scalar.
func quoteYAML(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// statusGraph compiles an RGD whose status projects expr as "out". The
// expression is bound beside the instance, since a status field must read
// the instance or a resource (as kro requires) and some cases are constant.
func statusGraph(t testing.TB, expr string, lim graph.Limits) *graph.Graph {
	t.Helper()
	schema := hostileSchema + "\nstatus:\n  out: " + quoteYAML("${cel.bind(instance, schema, "+expr+")}")
	g, err := graph.Compile(parseRGD(t, rgdDoc(schema, "resources:\n"+cm("holder", "", ""))), graph.Options{Limits: lim})
	require.NoError(t, err)
	return g
}

// forEachCM is a ConfigMap resource with forEach: one child per item,
// named after it.
func forEachCM(id, iterator, data string) string {
	return fmt.Sprintf("- id: %s\n  forEach:\n  - i: %s\n  template:\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: ${\"%s-\" + string(i)}\n    data:\n%s\n",
		id, quoteYAML(iterator), id, indent(data, "      "))
}

// hostileSpec is an instance spec; lists are built as the API server's
// JSON decoding would give them.
func hostileSpec(n int64, s string, xs, ys int) graph.Values {
	list := func(k int) []any {
		out := make([]any, k)
		for i := range out {
			out[i] = int64(i)
		}
		return out
	}
	return graph.Values{"schema": instance("x", map[string]any{"count": n, "s": s, "xs": list(xs), "ys": list(ys)})}
}

// requireLimit asserts that err is an *Error wrapping ErrLimit that quotes
// the expression.
func requireLimit(t testing.TB, err error) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, graph.ErrLimit, "%v", err)
	var ge *graph.Error
	require.ErrorAs(t, err, &ge)
	assert.NotEmpty(t, ge.Path)
}

// Every function that can grow its output checks the size before it
// allocates: each of these would take the process down with Go's
// unrecoverable out-of-memory (or run for minutes) without its check. They
// run in the test process on purpose: if a guard is missing, the test
// binary dies.
func TestGrowingFunctionsAreRefusedBeforeTheyAllocate(t *testing.T) {
	s1k := strings.Repeat("a", 1000)
	tests := map[string]struct {
		expr string
		vals graph.Values
	}{
		"random.seededString 2^40":   {`random.seededString(schema.spec.count, "x")`, hostileSpec(1<<40, "", 0, 0)},
		"lists.range 2^40":           {`lists.range(schema.spec.count)`, hostileSpec(1<<40, "", 0, 0)},
		"replace empty, repeated":    {`schema.spec.s.replace("", schema.spec.s).replace("", schema.spec.s)`, hostileSpec(0, s1k, 0, 0)},
		"replace with count":         {`schema.spec.s.replace("a", schema.spec.s + schema.spec.s, 900).size()`, hostileSpec(0, s1k, 0, 0)},
		"join of many copies":        {`lists.range(1000).map(i, schema.spec.s + schema.spec.s).join(",")`, hostileSpec(0, s1k, 0, 0)},
		"concatenation doubling":     {`cel.bind(a, schema.spec.s + schema.spec.s, cel.bind(b, a + a, cel.bind(c, b + b, cel.bind(d, c + c, cel.bind(e, d + d, cel.bind(f, e + e, cel.bind(g, f + f, cel.bind(h, g + g, cel.bind(i, h + h, cel.bind(j, i + i, cel.bind(k, j + j, k.size())))))))))))`, hostileSpec(0, s1k, 0, 0)},
		"list concatenation":         {`cel.bind(a, schema.spec.xs + schema.spec.xs, cel.bind(b, a + a, cel.bind(c, b + b, cel.bind(d, c + c, cel.bind(e, d + d, e.size())))))`, hostileSpec(0, "", 100000, 0)},
		"json.marshal of shared":     {`cel.bind(a, [schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s], cel.bind(b, [a, a, a, a, a, a, a, a, a, a], cel.bind(c, [b, b, b, b, b, b, b, b, b, b], json.marshal([c, c, c, c, c, c, c, c, c, c]).size())))`, hostileSpec(0, s1k, 0, 0)},
		"format":                     {`"%s%s%s%s%s%s%s%s%s%s".format([schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s]).size()`, hostileSpec(0, strings.Repeat("a", 200_000), 0, 0)},
		"format of a list":           {`"%s".format([lists.range(1000).map(i, schema.spec.s)]).size()`, hostileSpec(0, s1k, 0, 0)},
		"strings.quote":              {`strings.quote(schema.spec.s + schema.spec.s).size()`, hostileSpec(0, strings.Repeat("\x01", 300_000), 0, 0)},
		"base64.encode":              {`base64.encode(bytes(schema.spec.s + schema.spec.s)).size()`, hostileSpec(0, strings.Repeat("a", 450_000), 0, 0)},
		"flatten of shared lists":    {`lists.range(1000).map(i, schema.spec.xs).flatten().size()`, hostileSpec(0, "", 2000, 0)},
		"split into characters":      {`(schema.spec.s + schema.spec.s + schema.spec.s).split("").size()`, hostileSpec(0, strings.Repeat("a", 400_000), 0, 0)},
		"findAll of empty matches":   {`(schema.spec.s + schema.spec.s + schema.spec.s).findAll("").size()`, hostileSpec(0, strings.Repeat("a", 400_000), 0, 0)},
		"insertAtIndex in a loop":    {`lists.range(1000).map(i, lists.insertAtIndex(schema.spec.xs, 0, i)).size()`, hostileSpec(0, "", 100000, 0)},
		"merge of a map with itself": {`cel.bind(m, schema.spec.xs.transformMap(i, v, v), lists.range(1000).map(i, m.merge(m)).size())`, hostileSpec(0, "", 100000, 0)},
		"deepMerge of shared maps":   {`cel.bind(a, schema.spec.xs.transformMap(i, v, {"k": v}), cel.bind(b, schema.spec.xs.transformMap(i, v, a), cel.bind(c, schema.spec.xs.transformMap(i, v, b), c.deepMerge(c).size())))`, hostileSpec(0, "", 1000, 0)},
		"json.encode of shared":      {`cel.bind(a, [schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s], cel.bind(b, [a, a, a, a, a, a, a, a, a, a], cel.bind(c, [b, b, b, b, b, b, b, b, b, b], json.encode([c, c, c, c, c, c, c, c, c, c]).size())))`, hostileSpec(0, s1k, 0, 0)},
		"dynamic concatenation":      {`cel.bind(a, dyn(schema.spec.s) + dyn(schema.spec.s), cel.bind(b, dyn(a) + dyn(a), cel.bind(c, dyn(b) + dyn(b), cel.bind(d, dyn(c) + dyn(c), cel.bind(e, dyn(d) + dyn(d), cel.bind(f, dyn(e) + dyn(e), cel.bind(g, dyn(f) + dyn(f), cel.bind(h, dyn(g) + dyn(g), cel.bind(i, dyn(h) + dyn(h), cel.bind(j, dyn(i) + dyn(i), cel.bind(k, dyn(j) + dyn(j), size(k))))))))))))`, hostileSpec(0, s1k, 0, 0)},
		"dynamic replace":            {`dyn(schema.spec.s).replace("", dyn(schema.spec.s)).replace("", dyn(schema.spec.s))`, hostileSpec(0, s1k, 0, 0)},
		"status of shared values":    {`cel.bind(a, [schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s, schema.spec.s], cel.bind(b, [a, a, a, a, a, a, a, a, a, a], cel.bind(c, [b, b, b, b, b, b, b, b, b, b], [c, c, c, c, c, c, c, c, c, c])))`, hostileSpec(0, s1k, 0, 0)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := statusGraph(t, tt.expr, graph.Limits{})
			_, err := g.Status(context.Background(), tt.vals)
			requireLimit(t, err)
		})
	}
}

// The same functions on ordinary inputs are untouched.
func TestGrowingFunctionsWorkWithinTheLimits(t *testing.T) {
	tests := map[string]struct {
		expr string
		want any
	}{
		"seededString":  {`random.seededString(8, "x")`, "iot11jnp"},
		"range":         {`lists.range(3)`, []any{int64(0), int64(1), int64(2)}},
		"replace":       {`"a-b-c".replace("-", "--")`, "a--b--c"},
		"join":          {`["a", "b"].join(",")`, "a,b"},
		"format":        {`"%s=%d".format(["a", 1])`, "a=1"},
		"json.marshal":  {`json.marshal({"a": [1, "<"]})`, `{"a":[1,"\u003c"]}`},
		"flatten":       {`[[1], [2, [3]]].flatten()`, []any{int64(1), int64(2), []any{int64(3)}}},
		"split":         {`"a,b".split(",")`, []any{"a", "b"}},
		"matches const": {`"abc".matches("^a.c$")`, true},
		"find const":    {`"abc123".find("[0-9]+")`, "123"},
		"findAll const": {`"a1b2".findAll("[0-9]")`, []any{"1", "2"}},
		"distinct":      {`[1, 2, 1].distinct()`, []any{int64(1), int64(2)}},
		"sets":          {`sets.intersects([1, 2], [2, 3])`, true},
		"long map":      {`lists.range(3000).map(i, i * 2).filter(i, i % 3 == 0).size()`, int64(1000)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := statusGraph(t, tt.expr, graph.Limits{ExpressionTimeout: time.Hour})
			out, err := g.Status(context.Background(), hostileSpec(0, "", 0, 0))
			require.NoError(t, err)
			assert.Equal(t, tt.want, out["out"])
		})
	}
}

// A forEach iterator's list is refused before it is built (lists.range of
// 2^40) or copied (far past the 1000 combinations).
func TestForEachFromAHugeRangeIsRefusedBeforeItIsBuilt(t *testing.T) {
	for name, tt := range map[string]struct {
		n    int64
		kind error
	}{
		"2^40":          {1 << 40, graph.ErrLimit},
		"past the 1000": {1 << 19, graph.ErrTooManyIterations},
	} {
		t.Run(name, func(t *testing.T) {
			g, err := graph.Compile(parseRGD(t, rgdDoc(hostileSchema, "resources:\n"+forEachCM("a", "${lists.range(schema.spec.count)}", "k: ${string(i)}"))), graph.Options{})
			require.NoError(t, err)
			_, err = g.Node("a").Iterations(context.Background(), hostileSpec(tt.n, "", 0, 0))
			require.ErrorIs(t, err, tt.kind)
		})
	}
}

// Functions whose time grows with the product of their inputs are priced
// by that product before they run, and comprehensions are metered per
// step: each of these ran for a minute or more (cel-go's tracker saw them
// as cheap) and now ends with ErrLimit at once. The bound on the elapsed
// time only catches a hang; it is fifty times the per-expression deadline.
func TestQuadraticEvaluationsEndWithinTheDeadline(t *testing.T) {
	big := strings.Repeat("ab", 350_000)
	tests := map[string]struct {
		expr string
		vals graph.Values
	}{
		"distinct of 1e5":          {`schema.spec.xs.distinct().size()`, hostileSpec(0, "", 100_000, 0)},
		"indexOf over 700k":        {`schema.spec.s.indexOf(schema.spec.s.substring(1) + "c")`, hostileSpec(0, big, 0, 0)},
		"lastIndexOf over 700k":    {`schema.spec.s.lastIndexOf("c" + schema.spec.s.substring(1))`, hostileSpec(0, big, 0, 0)},
		"list indexOf in a loop":   {`schema.spec.xs.all(x, schema.spec.ys.indexOf(x) >= -1)`, hostileSpec(0, "", 100_000, 100_000)},
		"sets.intersects of 1e5":   {`sets.intersects(schema.spec.xs, schema.spec.ys.map(y, -1 - y))`, hostileSpec(0, "", 100_000, 100_000)},
		"sets.contains of 1e5":     {`sets.contains(schema.spec.xs, schema.spec.ys)`, hostileSpec(0, "", 100_000, 100_000)},
		"sets.equivalent of 1e5":   {`sets.equivalent(schema.spec.xs, schema.spec.ys)`, hostileSpec(0, "", 100_000, 100_000)},
		"nested all over 1e5":      {`schema.spec.xs.all(x, schema.spec.ys.exists(y, y == x))`, hostileSpec(0, "", 100_000, 100_000)},
		"contains over 700k":       {`schema.spec.s.contains(schema.spec.s.substring(1) + "c")`, hostileSpec(0, big, 0, 0)},
		"matches a long pattern":   {`schema.spec.s.matches(schema.spec.s.substring(0, 1000))`, hostileSpec(0, big, 0, 0)},
		"sort in a loop":           {`lists.range(100).all(i, schema.spec.xs.sort().size() > 0)`, hostileSpec(0, "", 100_000, 0)},
		"charAt in a loop":         {`lists.range(1000).all(i, schema.spec.s.charAt(i) != "z")`, hostileSpec(0, big, 0, 0)},
		"json.unmarshal in a loop": {`lists.range(1000).all(i, json.unmarshal(schema.spec.s) != null)`, hostileSpec(0, "["+strings.Repeat("0,", 300_000)+"0]", 0, 0)},
		"list equality in a loop":  {`lists.range(100000).all(i, schema.spec.xs == schema.spec.ys)`, hostileSpec(0, "", 100_000, 100_000)},
		"concatenation in a loop":  {`lists.range(100000).map(i, schema.spec.s + "x").size() > 0`, hostileSpec(0, big, 0, 0)},
	}
	lim := graph.Limits{}.WithDefaults()
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			// Compile refuses none of these by default (a platform may
			// refuse some by their estimate): the run-time bounds stop them.
			g := statusGraph(t, tt.expr, graph.Limits{})
			start := time.Now()
			_, err := g.Status(context.Background(), tt.vals)
			requireLimit(t, err)
			assert.Less(t, time.Since(start), 50*lim.ExpressionTimeout)
		})
	}
}

// Metering is linear in a comprehension's length: cel-go's tracker took
// 30 s for this (its bookkeeping is searched at every step), untracked
// evaluation 27 ms. (The deadline is raised so that a loaded machine does
// not fail the test: linearity is what it checks.)
func TestLongComprehensionIsMeteredInLinearTime(t *testing.T) {
	g := statusGraph(t, `schema.spec.xs.all(x, x >= 0)`, graph.Limits{ExpressionTimeout: time.Minute, InstanceTimeout: time.Minute})
	b := graph.NewBudget(g.Limits())
	out, err := g.Status(graph.WithBudget(context.Background(), b), hostileSpec(0, "", 100_000, 0))
	require.NoError(t, err)
	assert.Equal(t, true, out["out"])
	assert.Greater(t, b.Spent(), uint64(100_000), "every step is counted")
	assert.Less(t, b.Spent(), uint64(1_000_000))
}

// All evaluations of one reconcile share the instance's budget: a forEach
// whose every item is just under the per-expression limit is stopped by
// the instance's limit, not allowed a thousand times over.
func TestForEachItemsShareTheInstanceBudget(t *testing.T) {
	// The clock is taken out of it (a loaded machine or the race detector
	// must not change what this tests): cost alone stops the forEach.
	lim := graph.Limits{ExpressionCost: 20_000, InstanceCost: 200_000, ExpressionTimeout: time.Hour, InstanceTimeout: time.Hour}
	rgd := parseRGD(t, rgdDoc(hostileSchema, "resources:\n"+forEachCM("a", "${lists.range(1000)}",
		"k: ${string(i)}\nv: ${string(schema.spec.xs.all(x, x >= 0))}")))
	g, err := graph.Compile(rgd, graph.Options{Limits: lim})
	require.NoError(t, err)
	vals := hostileSpec(0, "", 6_000, 0) // about 18,000 units per item

	b := graph.NewBudget(g.Limits())
	ctx := graph.WithBudget(context.Background(), b)
	its, err := g.Node("a").Iterations(ctx, vals)
	require.NoError(t, err)
	require.Len(t, its, 1000)
	rendered := 0
	for _, it := range its {
		if _, err = g.Node("a").Render(ctx, vals, it); err != nil {
			break
		}
		rendered++
	}
	requireLimit(t, err)
	assert.Contains(t, err.Error(), "Limits.InstanceCost")
	assert.Less(t, rendered, 12)
	assert.Greater(t, rendered, 5)

	// Each item alone is within the per-expression limit.
	_, err = g.Node("a").Render(context.Background(), vals, its[0])
	require.NoError(t, err)
}

// The instance's wall-clock budget stops a reconcile made of many
// evaluations that are each cheap enough.
func TestInstanceTimeoutStopsAReconcile(t *testing.T) {
	lim := graph.Limits{InstanceTimeout: time.Millisecond}
	g := statusGraph(t, `schema.spec.xs.all(x, x >= 0)`, lim)
	ctx := graph.WithBudget(context.Background(), graph.NewBudget(g.Limits()))
	var err error
	for range 10_000 {
		if _, err = g.Status(ctx, hostileSpec(0, "", 5_000, 0)); err != nil {
			break
		}
	}
	requireLimit(t, err)
	assert.Contains(t, err.Error(), "Limits.InstanceTimeout")
}

// Cancelling the context stops an evaluation.
func TestCancelledContextStopsEvaluation(t *testing.T) {
	g := statusGraph(t, `schema.spec.xs.all(x, x >= 0)`, graph.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.Status(ctx, hostileSpec(0, "", 100_000, 0))
	requireLimit(t, err)
	assert.ErrorIs(t, err, context.Canceled)
}

// The children of one instance are counted across its resources.
func TestChildrenAreCountedAcrossResources(t *testing.T) {
	var resources strings.Builder
	resources.WriteString("resources:\n")
	for i := range 5 {
		resources.WriteString(forEachCM(fmt.Sprintf("r%d", i), "${lists.range(1000)}", "k: ${string(i)}"))
	}
	g, err := graph.Compile(parseRGD(t, rgdDoc(hostileSchema, resources.String())), graph.Options{Limits: graph.Limits{MaxChildren: 3000}})
	require.NoError(t, err)
	ctx := graph.WithBudget(context.Background(), graph.NewBudget(g.Limits()))
	var errs []error
	for _, n := range g.Nodes {
		_, err := n.Iterations(ctx, hostileSpec(0, "", 0, 0))
		errs = append(errs, err)
	}
	require.NoError(t, errors.Join(errs[:3]...))
	requireLimit(t, errs[3])
	assert.Contains(t, errs[3].Error(), "Limits.MaxChildren")
}

// The bytes rendered for one instance's children are bounded together.
func TestRenderedBytesAreBoundedPerInstance(t *testing.T) {
	rgd := parseRGD(t, rgdDoc(hostileSchema, "resources:\n"+forEachCM("a", "${lists.range(1000)}", "k: ${string(i)}\nv: ${schema.spec.s}")))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	vals := hostileSpec(0, strings.Repeat("x", 512<<10), 0, 0)
	b := graph.NewBudget(g.Limits())
	ctx := graph.WithBudget(context.Background(), b)
	its, err := g.Node("a").Iterations(ctx, vals)
	require.NoError(t, err)
	rendered := 0
	for _, it := range its {
		if _, err = g.Node("a").Render(ctx, vals, it); err != nil {
			break
		}
		rendered++
	}
	requireLimit(t, err)
	assert.Contains(t, err.Error(), "Limits.MaxRenderedBytes")
	assert.Equal(t, 127, rendered, "64 MiB holds 127 objects of 512 KiB and a bit")
	assert.LessOrEqual(t, b.Rendered(), int64(graph.DefaultMaxRenderedBytes))
}

// Error messages quote at most Limits.MaxMessageExpression characters of
// an expression, at compile and at evaluation.
func TestLongExpressionsAreTruncatedInMessages(t *testing.T) {
	long := " + size(\"" + strings.Repeat("a", 99_000) + "\")" // about 100k characters
	_, err := graph.Compile(parseRGD(t, rgdDoc(hostileSchema, "resources:\n"+cm("a", "", "k: "+quoteYAML("${string(schema.spec.missing"+long+")}")))), graph.Options{})
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 1000, "compile error: %.300s", err.Error())
	assert.Contains(t, err.Error(), "…")

	g := statusGraph(t, `int(schema.spec.s)`+long, graph.Limits{MaxMessageExpression: 50})
	_, err = g.Status(context.Background(), hostileSpec(0, strings.Repeat("z", 100_000), 0, 0))
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 500, "evaluation error: %.300s", err.Error())
}

// Compile prices every expression with the instance schema's bounds, as
// the API server prices a CRD's validation rules. kro refuses no
// expression for its cost, so by default a high estimate is a warning that
// names the expression and the lists that lack maxItems; a platform that
// sets Limits.MaxExpressionEstimatedCost refuses it. Bounding the lists
// silences both.
func TestExpensiveEstimatesWarnUnlessThePlatformRefusesThem(t *testing.T) {
	const quadratic = `${string(schema.spec.xs.all(x, schema.spec.ys.exists(y, y == x)))}`
	rgd := parseRGD(t, rgdDoc(hostileSchema, "resources:\n"+cm("a", "", "k: "+quoteYAML(quadratic))))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err, "kro accepts it: fleetgraph does too")
	require.Len(t, g.Warnings, 1)
	w := g.Warnings[0]
	assert.Equal(t, "a", w.ResourceID)
	assert.Equal(t, "data.k", w.Path)
	assert.Equal(t, quadratic, w.Expression)
	assert.Contains(t, w.Message, "schema.spec.xs (no maxItems), schema.spec.ys (no maxItems)")
	assert.NotContains(t, w.Message, "schema.spec.s ", "the string it does not read is not named")

	_, err = graph.Compile(rgd, graph.Options{Limits: graph.Limits{MaxExpressionEstimatedCost: graph.EstimatedCostWarning}})
	requireLimit(t, err)
	var ge *graph.Error
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, "a", ge.ResourceID)
	assert.Equal(t, "data.k", ge.Path)
	assert.Equal(t, quadratic, ge.Expression)
	assert.Contains(t, err.Error(), "Limits.MaxExpressionEstimatedCost")
	assert.Contains(t, err.Error(), "schema.spec.ys (no maxItems)")

	bounded := strings.ReplaceAll(hostileSchema, `"[]integer"`, `"[]integer | maxItems=1000"`)
	g, err = graph.Compile(parseRGD(t, rgdDoc(bounded, "resources:\n"+cm("a", "", "k: "+quoteYAML(quadratic)))),
		graph.Options{Limits: graph.Limits{MaxExpressionEstimatedCost: graph.EstimatedCostWarning}})
	require.NoError(t, err)
	assert.Empty(t, g.Warnings)
}

// An expensive estimate over the fields of a resource names the resource:
// no schema bounds what a child holds.
func TestExpensiveEstimatesOverAResourceNameIt(t *testing.T) {
	res := "resources:\n" + cm("a", "", "") + cm("b", "", "k: "+quoteYAML(`${string(a.data.all(k, a.data.exists(j, a.data[j] == a.data[k])))}`))
	g, err := graph.Compile(parseRGD(t, rgdDoc(hostileSchema, res)), graph.Options{})
	require.NoError(t, err)
	require.Len(t, g.Warnings, 1)
	assert.Contains(t, g.Warnings[0].Message, "the fields of a (a resource's schema bounds none)")
}

// No RGD of the repository's corpora comes near a limit at compile: the
// defaults are generous enough for everything kro accepts. (kro's own
// examples are checked by hack/krodiff's compile test.)
func TestCorporaCompileWithinTheDefaultLimits(t *testing.T) {
	var files []string
	for _, dir := range []string{"testdata", filepath.Join("..", "..", "hack", "krodiff", "testdata", "corpus")} {
		matches, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		require.NoError(t, err)
		files = append(files, matches...)
	}
	require.Greater(t, len(files), 100)
	for _, path := range files {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, doc := range strings.Split(string(raw), "\n---") {
			if !strings.Contains(doc, "kind: ResourceGraphDefinition") {
				continue
			}
			rgd := &v1alpha1.ResourceGraphDefinition{}
			if yaml.Unmarshal([]byte(doc), rgd) != nil {
				continue
			}
			_, err := graph.Compile(rgd, graph.Options{})
			assert.NotErrorIs(t, err, graph.ErrLimit, "%s", path)
		}
	}
}
