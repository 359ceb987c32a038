package instance

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
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// testEngine is an engine with the parts that hold state, and no cluster:
// its home cluster's place holds the memory and the owned index. It
// collects no orphans (it has no cluster to ask).
func testEngine() *Engine {
	return testEngineWith(Options{})
}

func testEngineWith(opts Options) *Engine {
	opts.OrphanGrace = -1
	return New(Config{
		Graph:   &graph.Graph{Name: "unit"},
		Home:    NewCluster("", nil),
		Context: context.Background(),
		Enqueue: func(types.NamespacedName) {},
		Options: opts,
	})
}

// testPlace is the home place of a testEngine.
func testPlace() *place {
	e := testEngine()
	return e.places.of(e, e.home)
}

func applied(rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetResourceVersion(rv)
	return u
}

var cmKey = newChildKey(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "ns", "a")

func TestEchoOfOurOwnApplyDoesNotRequeue(t *testing.T) {
	p := testPlace()
	p.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	assert.False(t, p.memory.observed(cmKey, "5"), "an event during the apply waits for its answer")
	assert.False(t, p.memory.end(cmKey, 1, applied("5"), nil), "the event was our own write")
	assert.False(t, p.memory.observed(cmKey, "5"))
	_, ok := p.memory.applied(cmKey, 1)
	assert.True(t, ok, "an unchanged child needs no apply")
}

func TestForeignWriteDuringApplyForcesAnotherApply(t *testing.T) {
	p := testPlace()
	p.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	p.memory.observed(cmKey, "6")
	assert.True(t, p.memory.end(cmKey, 1, applied("5"), nil))
	_, ok := p.memory.applied(cmKey, 1)
	assert.False(t, ok)
}

func TestDriftAfterApplyRequeuesAndForcesApply(t *testing.T) {
	p := testPlace()
	p.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	p.memory.end(cmKey, 1, applied("5"), nil)
	assert.True(t, p.memory.observed(cmKey, "7"))
	_, ok := p.memory.applied(cmKey, 1)
	assert.False(t, ok)
}

func TestChangedDesiredFormIsApplied(t *testing.T) {
	p := testPlace()
	p.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	p.memory.end(cmKey, 1, applied("5"), nil)
	_, ok := p.memory.applied(cmKey, 2)
	assert.False(t, ok)
}

func TestPruneWaitsForEveryNodeToSucceed(t *testing.T) {
	old := []Entry{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "kept", Node: "a"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "stale", Node: "a"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "waiting", Node: "b"},
	}
	o := &Outcome{
		applied: []Entry{old[0]},
		nodes:   map[string]*nodeResult{"a": {state: nodeReady}, "b": {state: nodeBlocked}},
	}
	assert.Equal(t, []Entry{old[1]}, toPrune(old, o), "only resolved nodes lose children")

	o.failed = &nodeResult{state: nodeFailed}
	assert.Empty(t, toPrune(old, o), "nothing is pruned after a failure")
}

func TestSummaryNamesTheFailingNode(t *testing.T) {
	o := &Outcome{failed: &nodeResult{state: nodeFailed, reason: ReasonApplyFailed, message: "deployment: applying Deployment ns/x: denied"}}
	state, conds := summarize(o, nil, nil)
	assert.Equal(t, contract.StateError, state)
	assert.Equal(t, contract.ConditionReady, conds.ready.Type)
	assert.Equal(t, "False", conds.ready.Status)
	assert.Contains(t, conds.ready.Message, "deployment")

	state, conds = summarize(&Outcome{waiting: []string{"db: waiting for readyWhen"}}, nil, nil)
	assert.Equal(t, contract.StateInProgress, state)
	assert.Contains(t, conds.ready.Message, "db")

	state, _ = summarize(&Outcome{}, nil, nil)
	assert.Equal(t, contract.StateActive, state)
}

func TestOwnedIndexFollowsOwnerChanges(t *testing.T) {
	p := testPlace()
	p.recordChild(cmKey, "uid-a", "config", "cm-1")
	assert.Equal(t, []Entry{entryOf("", cmKey, "config")}, p.owned.ownedBy("uid-a", ""))
	p.recordChild(cmKey, "uid-b", "config", "cm-1")
	assert.Empty(t, p.owned.ownedBy("uid-a", ""), "a child relabelled to another instance moves")
	assert.Len(t, p.owned.ownedBy("uid-b", ""), 1)
	p.dropChild(cmKey)
	assert.Empty(t, p.owned.ownedBy("uid-b", ""))
	assert.False(t, p.owned.owns(cmKey))
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
	e := testEngine()
	p := e.places.of(e, e.home)
	owner := types.NamespacedName{Namespace: "ns", Name: "demo"}
	inst := &unstructured.Unstructured{Object: map[string]any{}}
	inst.SetNamespace("ns")
	inst.SetName("demo")
	inst.SetUID("uid-a")
	e.Instances().Saw(inst)
	p.memory.begin(cmKey, owner)
	p.memory.end(cmKey, 1, applied("5"), nil)
	p.recordChild(cmKey, "uid-a", "config", "cm-1")

	e.ForgetInstance(owner, "") // gone without our finalize path: no UID at hand
	assert.Empty(t, e.instances.owners, "the UID is forgotten by the name it was seen under")
	assert.Empty(t, p.memory.children, "the apply memory of its children is dropped")
	assert.Empty(t, e.instances.lastSeen)
}

func TestAFailedFirstApplyLeavesNoMemory(t *testing.T) {
	p := testPlace()
	p.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	p.memory.end(cmKey, 1, applied(""), assert.AnError)
	assert.Empty(t, p.memory.children)
}

func TestReferrersAreFoundByNameOrSelector(t *testing.T) {
	e := testEngine()
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	byName := types.NamespacedName{Namespace: "ns", Name: "by-name"}
	bySelector := types.NamespacedName{Namespace: "ns", Name: "by-selector"}
	e.refs.set(byName, []resolvedRef{{gvk: secret, namespace: "ns", name: "creds"}})
	sel, err := labels.Parse("app=web")
	require.NoError(t, err)
	e.refs.set(bySelector, []resolvedRef{{gvk: secret, namespace: "ns", selector: sel}})

	obj := func(name string, l map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetLabels(l)
		return u
	}
	assert.Equal(t, []types.NamespacedName{byName}, e.refs.referrers("", secret, obj("creds", nil)))
	assert.Equal(t, []types.NamespacedName{bySelector}, e.refs.referrers("", secret, obj("other", map[string]string{"app": "web"})))
	assert.Empty(t, e.refs.referrers("", secret, obj("other", nil)))

	e.refs.set(byName, nil)
	assert.Empty(t, e.refs.referrers("", secret, obj("creds", nil)), "references dropped are unindexed")
	assert.Len(t, e.refs.index, 1)
}

// A child whose answer nothing reads is remembered without it: an unchanged
// apply is still skipped, a reader that needs the answer applies again,
// and an answer that shows the child being deleted is not remembered.
func TestAnApplyRememberedWithoutItsAnswer(t *testing.T) {
	p := testPlace()
	p.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	assert.False(t, p.memory.endWithoutAnswer(cmKey, 1, applied("5"), nil))
	assert.True(t, p.memory.unchanged(cmKey, 1))
	assert.False(t, p.memory.unchanged(cmKey, 2), "a changed desired form")
	_, ok := p.memory.applied(cmKey, 1)
	assert.False(t, ok, "no answer to hand a reader")
	assert.False(t, p.memory.observed(cmKey, "5"), "the echo of our own apply")
	assert.True(t, p.memory.unchanged(cmKey, 1))

	deleting := applied("6")
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	p.memory.begin(cmKey, types.NamespacedName{Name: "owner"})
	p.memory.endWithoutAnswer(cmKey, 1, deleting, nil)
	assert.False(t, p.memory.unchanged(cmKey, 1), "a child being deleted is applied again")
}

var cmGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// instanceNamed is an instance under key with UID uid.
func instanceNamed(key types.NamespacedName, uid types.UID) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	u.SetUID(uid)
	return u
}

// objectNamed is an object ns/name.
func objectNamed(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}
