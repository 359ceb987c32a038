package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// hostileRGD is an RGD named name whose spec.schema has the given spec,
// types and status (each may be nil), extra fields of spec.schema, and the
// given resources.
type hostileRGD struct {
	spec, types, status map[string]any
	schemaExtra         map[string]any
	resources           []any
}

func (h hostileRGD) build(t testing.TB) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	schema := map[string]any{"apiVersion": "v1alpha1", "kind": "Hostile"}
	for k, v := range map[string]map[string]any{"spec": h.spec, "types": h.types, "status": h.status} {
		if v != nil {
			schema[k] = v
		}
	}
	for k, v := range h.schemaExtra {
		schema[k] = v
	}
	resources := h.resources
	if resources == nil {
		resources = []any{configMap("cm", "${schema.metadata.name}")}
	}
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
		"metadata": map[string]any{"name": "hostile"},
		"spec":     map[string]any{"schema": schema, "resources": resources},
	})
	require.NoError(t, err)
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, json.Unmarshal(raw, rgd))
	return rgd
}

func configMap(id, name string) map[string]any {
	return map[string]any{"id": id, "template": map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name},
	}}
}

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

// compileMeasured compiles rgd and returns the result, the bytes allocated
// meanwhile and the time taken.
func compileMeasured(rgd *v1alpha1.ResourceGraphDefinition, opts graph.Options) (*graph.Graph, error, uint64, time.Duration) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	g, err := graph.Compile(rgd, opts)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return g, err, after.TotalAlloc - before.TotalAlloc, took
}

// requireLimitError checks that err is a compile error caused by a bound
// of Limits: every joined error a *graph.Error, at least one wrapping
// ErrLimit and kind, whose message names field (the Limits field).
func requireLimitError(t *testing.T, err error, kind error, field string) *graph.Error {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, graph.ErrLimit)
	require.ErrorIs(t, err, kind)
	var found *graph.Error
	for _, e := range unjoinAll(err) {
		var ge *graph.Error
		require.True(t, errors.As(e, &ge), "not a *graph.Error: %v", e)
		if found == nil && errors.Is(ge, graph.ErrLimit) {
			found = ge
		}
	}
	require.NotNil(t, found)
	assert.Contains(t, found.Error(), field)
	return found
}

func unjoinAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// The RGD: a few lines of doubling custom types. Unbounded, 17
// levels compiled in 8.7 s into a 7.7 MB CRD using 1.5 GiB, and 21 levels
// exhausted memory. Now the expansion is counted before anything is copied.
func TestCompileRefusesDoublingCustomTypesAtOnce(t *testing.T) {
	for _, levels := range []int{20, 30, 60} {
		t.Run(fmt.Sprint(levels), func(t *testing.T) {
			rgd := hostileRGD{
				spec:  map[string]any{"root": fmt.Sprintf("T%d", levels-1)},
				types: doublingTypes(levels),
			}.build(t)
			_, err, alloc, took := compileMeasured(rgd, graph.Options{})
			ge := requireLimitError(t, err, graph.ErrSchema, "Limits.MaxSchemaProperties")
			assert.Equal(t, "spec.schema.types.T13.b", ge.Path)
			assert.Contains(t, ge.Error(), "using type T12 here")
			assert.Contains(t, ge.Error(), "over the limit of 10000")
			assert.Less(t, took, time.Second)
			assert.Less(t, alloc, uint64(64<<20), "allocated %d bytes", alloc)
			t.Logf("%d levels: refused in %v, %d KiB allocated", levels, took, alloc>>10)
		})
	}
}

// The bound is the compile's Limits: a lower MaxSchemaProperties refuses a
// schema the default accepts.
func TestMaxSchemaPropertiesIsTheCompilesLimit(t *testing.T) {
	rgd := hostileRGD{spec: map[string]any{"root": "T8"}, types: doublingTypes(9)}.build(t)
	_, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	_, err = graph.Compile(rgd, graph.Options{Limits: graph.Limits{MaxSchemaProperties: 100}})
	ge := requireLimitError(t, err, graph.ErrSchema, "Limits.MaxSchemaProperties")
	assert.Contains(t, ge.Error(), "over the limit of 100 ")
}

// checkCRDSize: the generated CRD, whatever made it large, is held to
// MaxCRDBytes at compile, not refused by every spoke at fan-out.
func TestCompileRefusesACRDOverMaxCRDBytes(t *testing.T) {
	cols := make([]any, 0, 2000)
	for i := range 2000 {
		cols = append(cols, map[string]any{
			"name": fmt.Sprintf("c%d", i), "type": "string", "jsonPath": ".spec.a",
			"description": strings.Repeat("d", 600),
		})
	}
	rgd := hostileRGD{
		spec:        map[string]any{"a": "string"},
		schemaExtra: map[string]any{"additionalPrinterColumns": cols},
	}.build(t)
	_, err, alloc, _ := compileMeasured(rgd, graph.Options{})
	ge := requireLimitError(t, err, graph.ErrSchema, "Limits.MaxCRDBytes")
	assert.Equal(t, "spec.schema", ge.Path)
	assert.Regexp(t, `the generated CRD is 1[0-9]{6} bytes of JSON, over the limit of 1048576 \(Limits.MaxCRDBytes\)`, ge.Error())
	assert.Contains(t, ge.Error(), "printer columns")
	assert.Less(t, alloc, uint64(64<<20), "allocated %d bytes", alloc)

	small := hostileRGD{spec: map[string]any{"a": "string"}}.build(t)
	_, err = graph.Compile(small, graph.Options{})
	require.NoError(t, err)
	_, err = graph.Compile(small, graph.Options{Limits: graph.Limits{MaxCRDBytes: 1000}})
	ge = requireLimitError(t, err, graph.ErrSchema, "Limits.MaxCRDBytes")
	assert.Contains(t, ge.Error(), "over the limit of 1000 ")
}

// Every input a compile grows with is bounded: each hostile RGD here is
// either refused by a limit or compiled, and either way the compile
// allocates at most a few times what the RGD weighs (an RGD object is at
// most 1.5 MiB: etcd's limit).
func TestHostileRGDsCostWhatTheyWeigh(t *testing.T) {
	bigSpec := map[string]any{}
	for i := range 4000 {
		bigSpec[fmt.Sprintf("f%d", i)] = "string"
	}
	manyStatus := map[string]any{}
	for i := range 2000 {
		manyStatus[fmt.Sprintf("s%d", i)] = "${schema.spec}"
	}
	deepKey := strings.Repeat("k", 1000)
	var deepTemplate any = "${schema.spec.a}"
	for range 700 {
		deepTemplate = map[string]any{deepKey: deepTemplate}
	}
	manyResources := make([]any, 0, 3000)
	for i := range 3000 {
		manyResources = append(manyResources, configMap(fmt.Sprintf("r%d", i), fmt.Sprintf("${schema.metadata.name}-%d", i)))
	}
	leaves := map[string]any{}
	for i := range 4000 {
		leaves[fmt.Sprintf("l%d", i)] = "${schema.spec.a}"
	}
	var deepStatus any = leaves
	for range 900 {
		deepStatus = map[string]any{strings.Repeat("n", 200): deepStatus}
	}
	var tooDeepStatus any = "${schema.spec.a}"
	for range 1200 {
		tooDeepStatus = map[string]any{"n": tooDeepStatus}
	}
	bigEnum := "string | enum=" + strings.Repeat("abcdefghijklmnopqrstuvwxyz,", 40000) + "z"
	bigDefault := `object | default={"a": "` + strings.Repeat("x", 1<<20) + `"}`
	tests := map[string]struct {
		rgd   hostileRGD
		limit string // the Limits field that refuses it; empty: compiles
	}{
		"status projects a large spec many times": {
			rgd:   hostileRGD{spec: bigSpec, status: manyStatus},
			limit: "Limits.MaxSchemaProperties",
		},
		"a large enum": {
			rgd:   hostileRGD{spec: map[string]any{"a": bigEnum}},
			limit: "Limits.MaxCRDBytes",
		},
		"a large default": {
			rgd:   hostileRGD{spec: map[string]any{"a": bigDefault}},
			limit: "Limits.MaxCRDBytes",
		},
		"deep template with long keys": {
			rgd: hostileRGD{spec: map[string]any{"a": "string"}, resources: []any{map[string]any{"id": "cm", "template": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}, "data": deepTemplate,
			}}}},
		},
		"many status leaves deep down": {
			rgd: hostileRGD{spec: map[string]any{"a": "string"}, status: map[string]any{"deep": deepStatus}},
		},
		"status nested deeper than a CRD may be": {
			rgd:   hostileRGD{spec: map[string]any{"a": "string"}, status: map[string]any{"deep": tooDeepStatus}},
			limit: "a CRD's schema cannot nest deeper",
		},
		"thousands of resources": {
			rgd: hostileRGD{spec: map[string]any{"a": "string"}, resources: manyResources},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			rgd := tt.rgd.build(t)
			raw, err := json.Marshal(rgd)
			require.NoError(t, err)
			_, err, alloc, took := compileMeasured(rgd, graph.Options{})
			t.Logf("RGD %d KiB: compile %v, %d KiB allocated, err %.300v", len(raw)>>10, took, alloc>>10, err)
			if tt.limit != "" {
				requireLimitError(t, err, graph.ErrSchema, tt.limit)
			} else {
				require.NoError(t, err)
			}
			assert.Less(t, alloc, uint64(64<<20), "allocated %d bytes", alloc)
		})
	}
}

// A compile whose context ends stops between resources and says why; that
// is not an error of the RGD.
func TestCompileContextStops(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("hub stopping"))
	_, err := graph.CompileContext(ctx, chainRGD(t, 3), graph.Options{})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "hub stopping")
	var ge *graph.Error
	assert.False(t, errors.As(err, &ge), "not a *graph.Error: %v", err)
}

// Compile errors quote at most Limits.MaxMessageExpression characters of
// an expression: they go into conditions, events and logs.
func TestCompileErrorsCutLongExpressions(t *testing.T) {
	long := "${schema.spec.nope + '" + strings.Repeat("x", 100_000) + "'}"
	rgd := hostileRGD{spec: map[string]any{"a": "string"}, resources: []any{configMap("cm", long)}}.build(t)
	_, err := graph.Compile(rgd, graph.Options{})
	require.Error(t, err)
	var ge *graph.Error
	require.True(t, errors.As(err, &ge))
	assert.Equal(t, "cm", ge.ResourceID)
	assert.Equal(t, "metadata.name", ge.Path)
	assert.Equal(t, graph.DefaultMaxMessageExpression+1, utf8.RuneCountInString(ge.Expression))
	assert.True(t, strings.HasPrefix(ge.Expression, "${schema.spec.nope + 'xx"))
	assert.True(t, strings.HasSuffix(ge.Expression, "…"))
}
