package spoke

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// decoded is obj as an informer holds it: JSON decoded into an
// unstructured object (int64 integers, float64 others).
func decoded(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(data))
	return u.Object
}

func TestAtLeastEstimatesTheJSONSize(t *testing.T) {
	ints := make([]any, 5000)
	for i := range ints {
		ints[i] = 100000 + i
	}
	for name, obj := range map[string]map[string]any{
		"small": {"apiVersion": "x.io/v1", "kind": "K", "metadata": map[string]any{"name": "a", "labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"replicas": 3, "image": "nginx", "debug": false, "extra": nil}},
		"integers": {"apiVersion": "x.io/v1", "kind": "K", "spec": map[string]any{"xs": ints}},
		"string":   {"apiVersion": "x.io/v1", "kind": "K", "spec": map[string]any{"value": strings.Repeat("x", 70_000)}},
		"nested": {"apiVersion": "x.io/v1", "kind": "K", "spec": map[string]any{"items": []any{
			map[string]any{"a": []any{"b", "c", map[string]any{"d": true}}}, map[string]any{"e": 1.5}}}},
	} {
		t.Run(name, func(t *testing.T) {
			obj := decoded(t, obj)
			data, err := json.Marshal(obj)
			require.NoError(t, err)
			n := len(data)
			assert.True(t, atLeast(obj, n*9/10), "%d bytes of JSON are at least %d", n, n*9/10)
			assert.False(t, atLeast(obj, n*11/10+8), "%d bytes of JSON are less than %d", n, n*11/10+8)
		})
	}
}

// TestAtLeastStopsAtItsLimit: the walk over an instance far larger than
// the limit visits about limit values, whatever the instance's size, and
// allocates nothing.
func TestAtLeastStopsAtItsLimit(t *testing.T) {
	const limit = 1 << 10
	huge := make([]any, 1_000_000)
	for i := range huge {
		huge[i] = int64(i % 10)
	}
	obj := map[string]any{"spec": map[string]any{"xs": huge}}
	w := sizeWalk{left: limit}
	require.True(t, w.object(obj))
	assert.LessOrEqual(t, w.visits, limit, "values visited")
	assert.Zero(t, testing.AllocsPerRun(10, func() { atLeast(obj, limit) }), "allocations per walk")

	deep := map[string]any{}
	for range 10_000 {
		deep = map[string]any{"a": deep}
	}
	w = sizeWalk{left: limit}
	require.True(t, w.object(deep))
	assert.LessOrEqual(t, w.visits, limit, "levels visited")
}
