package spoke

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// testMember is a member with the parts that hold state, and no cluster.
func testMember() *member {
	m := &member{
		instances: newInstanceMemory(),
		states:    newInstanceStates(context.Background(), "unit", "unit"),
		memory:    newApplyMemory(),
		owned:     newOwnedIndex(),
		resync:    newResyncSchedule(instance.DefaultResync),
	}
	m.refs = newExternalRefs(m)
	return m
}

func applied(rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetResourceVersion(rv)
	return u
}

var cmKey = newChildKey(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "ns", "a")

func TestEchoOfOurOwnApplyDoesNotRequeue(t *testing.T) {
	m := testMember()
	m.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	assert.False(t, m.memory.observed(cmKey, "5"), "an event during the apply waits for its answer")
	assert.False(t, m.memory.end(cmKey, 1, applied("5"), nil), "the event was our own write")
	assert.False(t, m.memory.observed(cmKey, "5"))
	_, ok := m.memory.applied(cmKey, 1)
	assert.True(t, ok, "an unchanged child needs no apply")
}

func TestForeignWriteDuringApplyForcesAnotherApply(t *testing.T) {
	m := testMember()
	m.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	m.memory.observed(cmKey, "6")
	assert.True(t, m.memory.end(cmKey, 1, applied("5"), nil))
	_, ok := m.memory.applied(cmKey, 1)
	assert.False(t, ok)
}

func TestDriftAfterApplyRequeuesAndForcesApply(t *testing.T) {
	m := testMember()
	m.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	m.memory.end(cmKey, 1, applied("5"), nil)
	assert.True(t, m.memory.observed(cmKey, "7"))
	_, ok := m.memory.applied(cmKey, 1)
	assert.False(t, ok)
}

func TestChangedDesiredFormIsApplied(t *testing.T) {
	m := testMember()
	m.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	m.memory.end(cmKey, 1, applied("5"), nil)
	_, ok := m.memory.applied(cmKey, 2)
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
	assert.Equal(t, []InventoryEntry{old[1]}, toPrune(old, o), "only resolved nodes lose children")

	o.failed = &nodeResult{state: nodeFailed}
	assert.Empty(t, toPrune(old, o), "nothing is pruned after a failure")
}

func TestSummaryNamesTheFailingNode(t *testing.T) {
	o := &outcome{failed: &nodeResult{state: nodeFailed, reason: reasonApplyFailed, message: "deployment: applying Deployment ns/x: denied"}}
	state, conds := summarize(o, nil)
	assert.Equal(t, contract.StateError, state)
	assert.Equal(t, contract.ConditionReady, conds[3].Type)
	assert.Equal(t, "False", conds[3].Status)
	assert.Contains(t, conds[3].Message, "deployment")

	state, conds = summarize(&outcome{waiting: []string{"db: waiting for readyWhen"}}, nil)
	assert.Equal(t, contract.StateInProgress, state)
	assert.Contains(t, conds[3].Message, "db")

	state, _ = summarize(&outcome{}, nil)
	assert.Equal(t, contract.StateActive, state)
}

func TestOurOwnInstanceWritesDoNotRequeue(t *testing.T) {
	o := &unstructured.Unstructured{Object: map[string]any{}}
	o.SetGeneration(1)
	n := o.DeepCopy()
	n.SetFinalizers([]string{contract.Finalizer})
	n.SetAnnotations(map[string]string{contract.AnnotationChildKinds: "v1/ConfigMap"})
	n.Object["status"] = map[string]any{"state": contract.StateActive}
	assert.False(t, metaChanged(o, n))
	n.SetAnnotations(map[string]string{contract.AnnotationReconcile: contract.ReconcileSuspended})
	assert.True(t, metaChanged(o, n))
	n = o.DeepCopy()
	n.SetGeneration(2)
	assert.True(t, metaChanged(o, n))
}

func TestOwnedIndexFollowsOwnerChanges(t *testing.T) {
	m := testMember()
	m.recordChild(cmKey, "uid-a", "config", "cm-1")
	assert.Equal(t, []InventoryEntry{entryOf(cmKey, "config")}, m.owned.ownedBy("uid-a"))
	m.recordChild(cmKey, "uid-b", "config", "cm-1")
	assert.Empty(t, m.owned.ownedBy("uid-a"), "a child relabelled to another instance moves")
	assert.Len(t, m.owned.ownedBy("uid-b"), 1)
	m.dropChild(cmKey)
	assert.Empty(t, m.owned.ownedBy("uid-b"))
	assert.False(t, m.owned.owns(cmKey))
}

func TestChildKindsRoundTrip(t *testing.T) {
	kinds := []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Version: "v1", Kind: "ConfigMap"},
		{Version: "v1", Kind: "ConfigMap"},
	}
	value := contract.EncodeChildKinds(kinds)
	assert.Equal(t, "v1/ConfigMap,apps/v1/Deployment", value)
	inst := &unstructured.Unstructured{Object: map[string]any{}}
	inst.SetAnnotations(map[string]string{contract.AnnotationChildKinds: value + ",garbage,/x,y/"})
	assert.Equal(t, contract.SortedKinds(kinds), contract.ChildKinds(inst), "unparsable entries are skipped")
}

func TestForgettingAnInstanceForgetsItsOwnerAndChildren(t *testing.T) {
	m := testMember()
	owner := types.NamespacedName{Namespace: "ns", Name: "demo"}
	inst := &unstructured.Unstructured{Object: map[string]any{}}
	inst.SetNamespace("ns")
	inst.SetName("demo")
	inst.SetUID("uid-a")
	m.observeInstance(inst)
	m.memory.begin(cmKey, owner)
	m.memory.end(cmKey, 1, applied("5"), nil)
	m.recordChild(cmKey, "uid-a", "config", "cm-1")

	m.forgetInstance(owner, "") // gone without our finalize path: no UID at hand
	assert.Empty(t, m.instances.owners, "the UID is forgotten by the name it was seen under")
	assert.Empty(t, m.memory.children, "the apply memory of its children is dropped")
	assert.Empty(t, m.instances.lastSeen)
}

func TestAFailedFirstApplyLeavesNoMemory(t *testing.T) {
	m := testMember()
	m.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	m.memory.end(cmKey, 1, applied(""), assert.AnError)
	assert.Empty(t, m.memory.children)
}

func TestReferrersAreFoundByNameOrSelector(t *testing.T) {
	m := testMember()
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	byName := types.NamespacedName{Namespace: "ns", Name: "by-name"}
	bySelector := types.NamespacedName{Namespace: "ns", Name: "by-selector"}
	m.refs.set(byName, []resolvedRef{{gvk: secret, namespace: "ns", name: "creds"}})
	sel, err := labels.Parse("app=web")
	require.NoError(t, err)
	m.refs.set(bySelector, []resolvedRef{{gvk: secret, namespace: "ns", selector: sel}})

	obj := func(name string, l map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetLabels(l)
		return u
	}
	assert.Equal(t, []types.NamespacedName{byName}, m.refs.referrers(secret, obj("creds", nil)))
	assert.Equal(t, []types.NamespacedName{bySelector}, m.refs.referrers(secret, obj("other", map[string]string{"app": "web"})))
	assert.Empty(t, m.refs.referrers(secret, obj("other", nil)))

	m.refs.set(byName, nil)
	assert.Empty(t, m.refs.referrers(secret, obj("creds", nil)), "references dropped are unindexed")
	assert.Len(t, m.refs.index, 1)
}

// A child whose answer nothing reads is remembered without it: an unchanged
// apply is still skipped, a reader that needs the answer applies again,
// and an answer that shows the child being deleted is not remembered.
func TestAnApplyRememberedWithoutItsAnswer(t *testing.T) {
	m := testMember()
	m.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	assert.False(t, m.memory.endWithoutAnswer(cmKey, 1, applied("5"), nil))
	assert.True(t, m.memory.unchanged(cmKey, 1))
	assert.False(t, m.memory.unchanged(cmKey, 2), "a changed desired form")
	_, ok := m.memory.applied(cmKey, 1)
	assert.False(t, ok, "no answer to hand a reader")
	assert.False(t, m.memory.observed(cmKey, "5"), "the echo of our own apply")
	assert.True(t, m.memory.unchanged(cmKey, 1))

	deleting := applied("6")
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	m.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	m.memory.endWithoutAnswer(cmKey, 1, deleting, nil)
	assert.False(t, m.memory.unchanged(cmKey, 1), "a child being deleted is applied again")
}
