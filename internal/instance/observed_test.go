package instance

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The remembered answer reads back with the types an apply's answer has
// (integers as int64, as CEL needs them), and each read is a copy of its
// own.
func TestRememberedAnswerKeepsTypesAndIsACopy(t *testing.T) {
	p := testPlace()
	answer := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": int64(3), "ratio": 0.5, "labels": map[string]any{"app": "x"}},
	}}
	answer.SetResourceVersion("7")
	p.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	require.False(t, p.memory.end(cmKey, 1, answer, nil))

	got, ok := p.memory.applied(cmKey, 1)
	require.True(t, ok)
	assert.Equal(t, answer.Object, got)
	assert.IsType(t, int64(0), got["spec"].(map[string]any)["replicas"])

	got["spec"].(map[string]any)["replicas"] = int64(9)
	again, ok := p.memory.applied(cmKey, 1)
	require.True(t, ok)
	assert.Equal(t, int64(3), again["spec"].(map[string]any)["replicas"], "a reader's change must not reach the memory")
}

// Answers of one kind are compressed against the first one of that kind;
// each reads back as it was, and later ones cost a fraction of their JSON.
func TestAnswersCompressAgainstTheirKind(t *testing.T) {
	c := &observedCodec{kinds: map[schema.GroupVersionKind]*kindCodec{}}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	answer := func(name string) map[string]any {
		return map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": "scale", "labels": map[string]any{"app": name}},
			"spec": map[string]any{"replicas": int64(1), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "web", "image": "nginx", "terminationMessagePath": "/dev/termination-log"}},
				"dnsPolicy":  "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
			}}},
		}
	}
	first := c.encode(gvk, answer("app-00001"))
	second := c.encode(gvk, answer("app-00002"))
	raw, err := json.Marshal(answer("app-00002"))
	require.NoError(t, err)
	assert.Less(t, len(second), len(raw)/4, "compressed against the first answer")
	for name, b := range map[string][]byte{"app-00001": first, "app-00002": second} {
		got, ok := c.decode(gvk, b)
		require.True(t, ok)
		assert.Equal(t, answer(name), got)
	}
	_, ok := c.decode(schema.GroupVersionKind{Kind: "Unknown"}, second)
	assert.False(t, ok, "a kind without a dictionary encoded nothing")
}
