package cacheopts

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

func managed() []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{{
		Manager: "someone", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:a":{}}}`)},
	}}
}

func TestTrimManagedFieldsKeepsManagersOnly(t *testing.T) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetManagedFields(managed())
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetManagedFields(managed())

	for _, obj := range []metav1.Object{meta, u} {
		out, err := TrimManagedFields(obj)
		require.NoError(t, err)
		mf := out.(metav1.Object).GetManagedFields()
		require.Len(t, mf, 1)
		assert.Equal(t, "someone", mf[0].Manager)
		assert.Equal(t, metav1.ManagedFieldsOperationApply, mf[0].Operation)
		assert.Nil(t, mf[0].FieldsV1)
	}
	tomb := "not an object"
	out, err := TrimManagedFields(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, out)
}

func TestTrimCacheKeepsAChosenTransform(t *testing.T) {
	o := &cluster.Options{}
	TrimCache(o)
	assert.NotNil(t, o.Cache.DefaultTransform)
	mine := func(any) (any, error) { return "mine", nil }
	o = &cluster.Options{}
	o.Cache.DefaultTransform = mine
	TrimCache(o)
	out, _ := o.Cache.DefaultTransform("x")
	assert.Equal(t, "mine", out)
}

func TestTrimObjectDropsWhatTheRuntimeNeverReads(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "WebApp",
		"spec":   map[string]any{"replicas": int64(2)},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
	}}
	u.SetName("a")
	u.SetManagedFields(managed())
	u.SetAnnotations(map[string]string{lastApplied: "{}", "keep": "me"})
	out, err := TrimObject(u)
	require.NoError(t, err)
	got := out.(*unstructured.Unstructured)
	assert.Empty(t, got.GetManagedFields(), "nothing reads an instance's managers")
	assert.Equal(t, map[string]string{"keep": "me"}, got.GetAnnotations())
	want := map[string]any{
		"apiVersion": "example.com/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "a", "annotations": map[string]any{"keep": "me"}},
		"spec":     map[string]any{"replicas": int64(2)},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
	}
	assert.Equal(t, want, got.Object, "everything else is kept, with its types")

	meta := &metav1.PartialObjectMetadata{}
	meta.SetManagedFields(append(managed(), metav1.ManagedFieldsEntry{Operation: metav1.ManagedFieldsOperationUpdate}))
	meta.SetLabels(map[string]string{"fleetgraph.dev/graph": "webapp", "app": "x"})
	meta.SetAnnotations(map[string]string{lastApplied: "{}"})
	out, err = TrimObject(meta)
	require.NoError(t, err)
	m := out.(*metav1.PartialObjectMetadata)
	assert.Equal(t, []metav1.ManagedFieldsEntry{{Manager: "someone"}}, m.ManagedFields, "the managers' names, which conflicts show")
	assert.Equal(t, map[string]string{"fleetgraph.dev/graph": "webapp", "app": "x"}, m.Labels)
	assert.Empty(t, m.Annotations)
}

// Equal strings decoded apart share one copy once interned, and the table
// starts over rather than grow past its bound.
func TestInternSharesAndStaysBounded(t *testing.T) {
	a, b := string([]byte("fleetgraph.dev/graph")), string([]byte("fleetgraph.dev/graph"))
	require.NotSame(t, unsafe.StringData(a), unsafe.StringData(b))
	assert.Same(t, unsafe.StringData(intern(a)), unsafe.StringData(intern(b)))
	for i := range 2 * maxInterned {
		intern(strconv.Itoa(i))
	}
	assert.LessOrEqual(t, strs.current.Load().n.Load(), int64(maxInterned))
	long := strings.Repeat("x", maxInternedLen+1)
	assert.Same(t, unsafe.StringData(long), unsafe.StringData(intern(long)), "long strings are left alone")
}

// Conditions alike in two instances are one map in the cache; lists of
// other things, and maps with floats, are left as they are.
func TestTrimObjectSharesLikeListItems(t *testing.T) {
	inst := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"weights": []any{map[string]any{"w": 0.5}}},
			"status": map[string]any{"conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "observedGeneration": int64(1), "lastTransitionTime": "2026-11-23T07:00:00Z",
			}}},
		}}
	}
	a, err := TrimObject(inst("a"))
	require.NoError(t, err)
	b, err := TrimObject(inst("b"))
	require.NoError(t, err)
	condOf := func(o any) map[string]any {
		return o.(*unstructured.Unstructured).Object["status"].(map[string]any)["conditions"].([]any)[0].(map[string]any)
	}
	weightOf := func(o any) map[string]any {
		return o.(*unstructured.Unstructured).Object["spec"].(map[string]any)["weights"].([]any)[0].(map[string]any)
	}
	assert.Equal(t, inst("a").Object, a.(*unstructured.Unstructured).Object)
	assert.Equal(t, reflect.ValueOf(condOf(a)).UnsafePointer(), reflect.ValueOf(condOf(b)).UnsafePointer(), "one shared condition")
	assert.NotEqual(t, reflect.ValueOf(weightOf(a)).UnsafePointer(), reflect.ValueOf(weightOf(b)).UnsafePointer(), "floats are not shared")

	again, err := TrimObject(a)
	require.NoError(t, err)
	assert.Equal(t, inst("a").Object, again.(*unstructured.Unstructured).Object, "the transform may run twice")
}
