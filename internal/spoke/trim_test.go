package spoke

import (
	"testing"

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
