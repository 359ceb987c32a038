package spoke

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// The remembered answer reads back with the types an apply's answer has
// (integers as int64, as CEL needs them), and each read is a copy of its
// own.
func TestRememberedAnswerKeepsTypesAndIsACopy(t *testing.T) {
	m := testMember()
	answer := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": int64(3), "ratio": 0.5, "labels": map[string]any{"app": "x"}},
	}}
	answer.SetResourceVersion("7")
	m.beginApply(cmKey, types.NamespacedName{Name: "owner"})
	require.False(t, m.endApply(cmKey, "h", answer, nil))

	got, ok := m.appliedChild(cmKey, "h")
	require.True(t, ok)
	assert.Equal(t, answer.Object, got)
	assert.IsType(t, int64(0), got["spec"].(map[string]any)["replicas"])

	got["spec"].(map[string]any)["replicas"] = int64(9)
	again, ok := m.appliedChild(cmKey, "h")
	require.True(t, ok)
	assert.Equal(t, int64(3), again["spec"].(map[string]any)["replicas"], "a reader's change must not reach the memory")
}
