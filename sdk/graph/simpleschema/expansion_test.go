package simpleschema_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph/simpleschema"
)

// doublingTypes declares T0 (one string) and, for i in 1..n-1, Ti made of
// two fields of type T(i-1): Ti expands to 2^i strings.
func doublingTypes(n int) map[string]any {
	types := map[string]any{"T0": "string"}
	for i := 1; i < n; i++ {
		prev := fmt.Sprintf("T%d", i-1)
		types[fmt.Sprintf("T%d", i)] = map[string]any{"a": prev, "b": prev}
	}
	return types
}

// measure runs f and returns how many bytes it allocated and how long it
// took.
func measure(f func()) (uint64, time.Duration) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took
}

func boundError(t *testing.T, err error) (*simpleschema.BoundError, *simpleschema.PathError) {
	t.Helper()
	require.ErrorIs(t, err, simpleschema.ErrTooLarge)
	var be *simpleschema.BoundError
	require.True(t, errors.As(err, &be), "a *BoundError in %v", err)
	var pe *simpleschema.PathError
	require.True(t, errors.As(err, &pe), "a *PathError in %v", err)
	return be, pe
}

// A type made of two copies of the previous one doubles at each level:
// unbounded, 21 levels exhaust a machine's memory. The bound is checked
// before anything is copied, so a schema of any depth is refused at once,
// at the first type that passes it.
func TestDoublingCustomTypesAreRefusedBeforeTheyExpand(t *testing.T) {
	for _, levels := range []int{20, 30, 60} {
		t.Run(fmt.Sprint(levels), func(t *testing.T) {
			types := doublingTypes(levels)
			spec := map[string]any{"root": fmt.Sprintf("T%d", levels-1)}
			var err error
			alloc, took := measure(func() { _, err = simpleschema.Convert("", spec, types) })
			be, pe := boundError(t, err)
			assert.Equal(t, "properties", be.Bound)
			assert.Equal(t, simpleschema.DefaultMaxProperties, be.Limit)
			// T13 is the first type over 10,000 properties (2^13 strings and
			// as many fields in T13 and below).
			assert.Equal(t, "types.T13.b", pe.Path)
			assert.Equal(t, "T12", be.Type)
			assert.Contains(t, err.Error(), "over the limit of 10000")
			assert.Less(t, alloc, uint64(64<<20), "allocated %d bytes", alloc)
			assert.Less(t, took, time.Second)
			assert.Equal(t, 1, strings.Count(err.Error(), "too large"), "reported once, not at every type above: %v", err)
		})
	}
}

// Wrapping a large type again and again costs one node per wrapper, not a
// copy of the large type per wrapper: only the schema in the end is
// copied, and it is within the bound.
func TestWrappingALargeTypeCostsOneNodePerWrapper(t *testing.T) {
	types := doublingTypes(12) // T11: 2^11 strings, 4094 fields
	const wrappers = 3000
	types["W0"] = map[string]any{"x": "T11"}
	for i := 1; i < wrappers; i++ {
		types[fmt.Sprintf("W%d", i)] = map[string]any{"x": fmt.Sprintf("W%d", i-1)}
	}
	spec := map[string]any{"root": fmt.Sprintf("W%d", wrappers-1)}
	var res simpleschema.Result
	var err error
	alloc, _ := measure(func() { res, err = simpleschema.Bounds{MaxDepth: 5000}.Convert("", spec, types) })
	require.NoError(t, err)
	out := res.Schema
	depth := 0
	for s := out.Properties["root"]; s.Properties["x"].Type != ""; s = s.Properties["x"] {
		depth++
	}
	assert.Equal(t, wrappers, depth)
	assert.Less(t, alloc, uint64(64<<20), "allocated %d bytes", alloc)
}

func TestSchemaBounds(t *testing.T) {
	wide := map[string]any{}
	for i := range 10_001 {
		wide[fmt.Sprintf("f%d", i)] = "string"
	}
	nested := func(levels int) any {
		var v any = "string"
		for range levels {
			v = map[string]any{"x": v}
		}
		return v
	}
	listOfLists := func(levels int) any {
		var v any = "string"
		for range levels {
			v = []any{v}
		}
		return v
	}
	chain := map[string]any{"L0": "string"}
	for i := 1; i < 1200; i++ {
		chain[fmt.Sprintf("L%d", i)] = fmt.Sprintf("[]L%d", i-1)
	}
	longEnum := "string | enum=" + strings.Repeat("abcdefghij,", 5000) + "z"
	tests := map[string]struct {
		spec, types map[string]any
		bound, path string
	}{
		"fields":            {spec: wide, bound: "properties", path: "f9999"},
		"nested objects":    {spec: map[string]any{"a": nested(1500)}, bound: "depth", path: "a" + strings.Repeat(".x", 999)},
		"nested YAML lists": {spec: map[string]any{"a": listOfLists(1500)}, bound: "depth", path: "a" + strings.Repeat("[]", 999)},
		"nested types":      {spec: map[string]any{"a": "L1199"}, types: chain, bound: "depth", path: "types.L1001"},
		"a large enum at every use": {
			spec:  map[string]any{"a": "E", "b": "E", "c": "E", "d": "E", "e": "E", "f": "E"},
			types: map[string]any{"E": map[string]any{"x": longEnum, "y": longEnum, "z": longEnum}},
			bound: "bytes", path: "f",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var err error
			alloc, _ := measure(func() { _, err = simpleschema.Convert("", tt.spec, tt.types) })
			be, pe := boundError(t, err)
			assert.Equal(t, tt.bound, be.Bound, "%v", err)
			if len(tt.path) > 200 {
				assert.True(t, strings.HasPrefix(pe.Path, tt.path[:100]), "path %q", pe.Path)
				assert.LessOrEqual(t, len(pe.Path), 260, "a long path is cut")
			} else {
				assert.Equal(t, tt.path, pe.Path)
			}
			assert.Less(t, alloc, uint64(64<<20), "allocated %d bytes", alloc)
		})
	}
}

// A type string nests at most 16 lists and maps (kro's rule), however
// long it is; types nesting types reach the depth bound above.
func TestALongTypeStringIsRefusedAtOnce(t *testing.T) {
	var err error
	alloc, _ := measure(func() {
		_, err = simpleschema.Convert("", map[string]any{"a": strings.Repeat("[]", 50_000) + "string"}, nil)
	})
	require.ErrorIs(t, err, simpleschema.ErrSyntax)
	assert.Contains(t, err.Error(), "nests more than 16")
	assert.Less(t, alloc, uint64(64<<20), "allocated %d bytes", alloc)
}

// Building every node's path as a string would cost the square of the
// depth times the key length; paths are spelled only when needed.
func TestDeepLongKeysCostWhatTheyWeigh(t *testing.T) {
	key := strings.Repeat("k", 1500)
	var v any = "string"
	for range 600 {
		v = map[string]any{key: v}
	}
	var err error
	alloc, _ := measure(func() { _, err = simpleschema.Bounds{MaxBytes: 4 << 20}.Convert("", map[string]any{"a": v}, nil) })
	require.NoError(t, err)
	// The input's keys alone take 0.9 MB; spelling each node's path would
	// allocate 270 MB.
	assert.Less(t, alloc, uint64(32<<20), "allocated %d bytes", alloc)
}

// Uses of a custom type share its schema while they are counted; markers
// on one use must never show on another, nor on the type.
func TestMarkersOnOneUseStayThere(t *testing.T) {
	out, err := convert(t, `
a: T | description=first validation="size(self) > 0"
b: T | description=second validation="size(self) < 9"
c: T
l: "[]T | maxItems=3"
m: "map[string]T"
`, `
T:
  v: string | validation="self != 'x'" validation="self != 'y'"
  w: "[]string | listType=set"
`)
	require.NoError(t, err)
	props := out["properties"].(map[string]any)
	rules := func(field string) []any {
		var out []any
		for _, r := range props[field].(map[string]any)["x-kubernetes-validations"].([]any) {
			out = append(out, r.(map[string]any)["rule"])
		}
		return out
	}
	assert.Equal(t, "first", props["a"].(map[string]any)["description"])
	assert.Equal(t, "second", props["b"].(map[string]any)["description"])
	assert.NotContains(t, props["c"], "description")
	assert.Equal(t, []any{"size(self) > 0"}, rules("a"))
	assert.Equal(t, []any{"size(self) < 9"}, rules("b"))
	assert.NotContains(t, props["c"], "x-kubernetes-validations")
	inner := props["c"].(map[string]any)["properties"].(map[string]any)["v"].(map[string]any)
	assert.Len(t, inner["x-kubernetes-validations"], 2)
	assert.Equal(t, props["c"], props["l"].(map[string]any)["items"])
	assert.Equal(t, props["c"], props["m"].(map[string]any)["additionalProperties"])
}

// A cycle is still a cycle when the types around it are large.
func TestCycleAmongLargeTypes(t *testing.T) {
	types := doublingTypes(10)
	types["A"] = map[string]any{"big": "T9", "b": "B"}
	types["B"] = map[string]any{"big": "T9", "a": "[]A"}
	_, err := simpleschema.ToOpenAPI("", map[string]any{"f": "A"}, types)
	require.ErrorIs(t, err, simpleschema.ErrTypeCycle)
	assert.Contains(t, err.Error(), "A -> B -> A")
	assert.NotErrorIs(t, err, simpleschema.ErrTooLarge)
}

// Each custom type is held to the bounds on its own, used or not.
func TestUnusedTypeOverTheBoundIsRefused(t *testing.T) {
	_, err := simpleschema.ToOpenAPI("", map[string]any{"f": "string"}, doublingTypes(15))
	be, pe := boundError(t, err)
	assert.Equal(t, "properties", be.Bound)
	assert.Equal(t, "types.T13.b", pe.Path)
}

// Within the bound the count is exact: 2^13-2 fields in T12 and below,
// plus the field that uses it.
func TestBoundIsInclusive(t *testing.T) {
	types := doublingTypes(13) // T12: 2^13 - 2 = 8190 fields
	_, err := simpleschema.Bounds{MaxProperties: 8191}.Convert("", map[string]any{"f": "T12"}, types)
	require.NoError(t, err)
	_, err = simpleschema.Bounds{MaxProperties: 8190}.Convert("", map[string]any{"f": "T12"}, types)
	be, pe := boundError(t, err)
	assert.Equal(t, 8191, be.Size)
	assert.Equal(t, "f", pe.Path)
}
