package spoke

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func testMember() *member {
	return &member{children: map[childKey]*childState{}}
}

func applied(rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetResourceVersion(rv)
	return u
}

var cmKey = childKey{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, namespace: "ns", name: "a"}

func TestEchoOfOurOwnApplyDoesNotRequeue(t *testing.T) {
	m := testMember()
	m.beginApply(cmKey, types.NamespacedName{Name: "owner"})
	assert.False(t, m.childObserved(cmKey, "5"), "an event during the apply waits for its answer")
	assert.False(t, m.endApply(cmKey, "h", applied("5"), nil), "the event was our own write")
	assert.False(t, m.childObserved(cmKey, "5"))
	_, ok := m.appliedChild(cmKey, "h")
	assert.True(t, ok, "an unchanged child needs no apply")
}

func TestForeignWriteDuringApplyForcesAnotherApply(t *testing.T) {
	m := testMember()
	m.beginApply(cmKey, types.NamespacedName{Name: "owner"})
	m.childObserved(cmKey, "6")
	assert.True(t, m.endApply(cmKey, "h", applied("5"), nil))
	_, ok := m.appliedChild(cmKey, "h")
	assert.False(t, ok)
}

func TestDriftAfterApplyRequeuesAndForcesApply(t *testing.T) {
	m := testMember()
	m.beginApply(cmKey, types.NamespacedName{Name: "owner"})
	m.endApply(cmKey, "h", applied("5"), nil)
	assert.True(t, m.childObserved(cmKey, "7"))
	_, ok := m.appliedChild(cmKey, "h")
	assert.False(t, ok)
}

func TestChangedDesiredFormIsApplied(t *testing.T) {
	m := testMember()
	m.beginApply(cmKey, types.NamespacedName{Name: "owner"})
	m.endApply(cmKey, "h", applied("5"), nil)
	_, ok := m.appliedChild(cmKey, "other")
	assert.False(t, ok)
}

func TestPruneWaitsForEveryNodeToSucceed(t *testing.T) {
	old := []InventoryEntry{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "kept", Node: "a"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "stale", Node: "a"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "waiting", Node: "b"},
	}
	o := &outcome{
		applied: []InventoryEntry{old[0]},
		nodes:   map[string]*nodeResult{"a": {state: nodeReady}, "b": {state: nodeBlocked}},
	}
	keep, prune := planInventory(old, o)
	assert.Equal(t, []InventoryEntry{old[1]}, prune, "only resolved nodes lose children")
	assert.ElementsMatch(t, []InventoryEntry{old[0], old[2]}, keep)

	o.failed = &nodeResult{state: nodeFailed}
	_, prune = planInventory(old, o)
	assert.Empty(t, prune, "nothing is pruned after a failure")
}

func TestSummaryNamesTheFailingNode(t *testing.T) {
	o := &outcome{failed: &nodeResult{state: nodeFailed, reason: reasonApplyFailed, message: "deployment: applying Deployment ns/x: denied"}}
	state, conds := summarize(o, nil)
	assert.Equal(t, StateError, state)
	assert.Equal(t, ConditionReady, conds[3].Type)
	assert.Equal(t, "False", conds[3].Status)
	assert.Contains(t, conds[3].Message, "deployment")

	state, conds = summarize(&outcome{waiting: []string{"db: waiting for readyWhen"}}, nil)
	assert.Equal(t, StateInProgress, state)
	assert.Contains(t, conds[3].Message, "db")

	state, _ = summarize(&outcome{}, nil)
	assert.Equal(t, StateActive, state)
}

func TestOurOwnInstanceWritesDoNotRequeue(t *testing.T) {
	o := &unstructured.Unstructured{Object: map[string]any{}}
	o.SetGeneration(1)
	n := o.DeepCopy()
	n.SetFinalizers([]string{Finalizer})
	n.SetAnnotations(map[string]string{AnnotationInventory: "[]"})
	n.Object["status"] = map[string]any{"state": StateActive}
	assert.False(t, instanceChanged(o, n))
	n.SetAnnotations(map[string]string{AnnotationReconcile: ReconcileSuspended})
	assert.True(t, instanceChanged(o, n))
	n = o.DeepCopy()
	n.SetGeneration(2)
	assert.True(t, instanceChanged(o, n))
}
