package instance

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

var owner1 = types.NamespacedName{Namespace: "ns", Name: "pair-1"}

// applyOnce records one apply of key in p's memory, answered at rv.
func applyOnce(p *place, key childKey, hash desiredHash, rv string) bool {
	p.memory.begin(key, owner1)
	return p.memory.endWithoutAnswer(key, hash, applied(rv), nil)
}

// twoClusters is an engine whose instances live in "" and write in
// spoke-1 and spoke-2, with a place in each.
func twoClusters() (e *Engine, spoke1, spoke2 *place) {
	e = testEngine()
	return e, e.places.of(e, NewCluster("spoke-1", nil)), e.places.of(e, NewCluster("spoke-2", nil))
}

func TestApplyMemoryEchoRequeuesNothing(t *testing.T) {
	_, p, _ := twoClusters()
	require.False(t, applyOnce(p, cmKey, 7, "10"))
	assert.False(t, p.memory.observed(cmKey, "10"), "the echo of our own apply")
	assert.True(t, p.memory.unchanged(cmKey, 7), "an apply that stands is not made again")
	assert.False(t, p.memory.unchanged(cmKey, 8), "a changed desired form is applied")

	assert.True(t, p.memory.observed(cmKey, "11"), "somebody else wrote it")
	assert.False(t, p.memory.unchanged(cmKey, 7), "drift is applied over")
	assert.True(t, p.memory.observed(cmKey, "11"), "a version we did not write never counts as ours")
}

func TestApplyMemoryRaceDuringApply(t *testing.T) {
	_, p, _ := twoClusters()
	p.memory.begin(cmKey, owner1)
	assert.False(t, p.memory.observed(cmKey, "10"), "end decides while an apply is in flight")
	assert.False(t, p.memory.endWithoutAnswer(cmKey, 7, applied("10"), nil), "only our own version was seen")
	assert.True(t, p.memory.unchanged(cmKey, 7))

	p.memory.begin(cmKey, owner1)
	p.memory.observed(cmKey, "11") // somebody else's
	p.memory.observed(cmKey, "12") // ours
	assert.True(t, p.memory.endWithoutAnswer(cmKey, 7, applied("12"), nil), "another writer raced us")
	assert.False(t, p.memory.unchanged(cmKey, 7))
}

// What is remembered goes with the child's deletion, a failed apply, the
// instance, and the resync (which applies regardless: Outcome.full).
func TestApplyMemoryForgets(t *testing.T) {
	e, left, right := twoClusters()
	applyOnce(left, cmKey, 7, "10")
	applyOnce(right, cmKey, 7, "20")

	left.memory.deleted(cmKey)
	assert.False(t, left.memory.unchanged(cmKey, 7), "a deleted child is applied again")
	assert.True(t, right.memory.unchanged(cmKey, 7), "the same name in another cluster is another child")

	right.memory.begin(cmKey, owner1)
	assert.False(t, right.memory.end(cmKey, 7, nil, errors.New("timeout")))
	assert.False(t, right.memory.unchanged(cmKey, 7), "a failed apply is made again")

	applyOnce(right, cmKey, 7, "21")
	right.recordChild(cmKey, "uid-1", "config", "cm-1")
	e.instances.observe(instanceNamed(owner1, "uid-1"))
	e.ForgetInstance(owner1, "uid-1")
	assert.Empty(t, right.memory.children, "nothing of a gone instance is remembered")
}

// The owned index holds what a deletion must delete in a cluster: a child
// we applied there for the owner, before any cache shows it, until its
// deletion is seen; in that cluster only.
func TestApplyMemoryHolds(t *testing.T) {
	_, spoke1, spoke2 := twoClusters()
	assert.Empty(t, spoke2.owned.ownedBy("uid-1", "spoke-2"), "nothing applied")
	spoke2.recordChild(cmKey, "uid-1", "right", "cm-1") // what applyChild records from the answer
	assert.Equal(t, []Entry{entryOf("spoke-2", cmKey, "right")}, spoke2.owned.ownedBy("uid-1", "spoke-2"))
	assert.Empty(t, spoke1.owned.ownedBy("uid-1", "spoke-1"), "another cluster")
	secret := newChildKey(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, "ns", "a")
	assert.False(t, spoke2.owned.owns(secret), "another kind")
	assert.Empty(t, spoke2.owned.ownedBy("uid-2", "spoke-2"), "another owner")
	spoke2.dropChild(cmKey)
	assert.Empty(t, spoke2.owned.ownedBy("uid-1", "spoke-2"), "its deletion was seen")
}

// ForgetCluster is what a driver calls once a cluster may have lost what
// was written to it: everything applied there is applied again, the
// children and references there are found again, and the instances that
// had any there are returned to be reconciled. Other clusters keep theirs.
func TestForgetClusterForgetsItsAppliesAndReferences(t *testing.T) {
	e, spoke1, spoke2 := twoClusters()
	writer := types.NamespacedName{Namespace: "ns", Name: "writer"}
	reader := types.NamespacedName{Namespace: "ns", Name: "reader"}
	e.instances.observe(instanceNamed(writer, "uid-w"))
	applyOnce(spoke1, cmKey, 7, "10")
	spoke1.recordChild(cmKey, "uid-w", "config", "cm-1")
	applyOnce(spoke2, cmKey, 7, "20")
	cancelled := 0
	ref := resolvedRef{cluster: "spoke-1", gvk: cmGVK, namespace: "ns", name: "source"}
	e.refs.scoped[ref.scope()] = &scoped{cancel: func() { cancelled++ }, users: map[types.NamespacedName]struct{}{}}
	e.refs.set(reader, []resolvedRef{ref})

	again := e.ForgetCluster("spoke-1")
	assert.ElementsMatch(t, []types.NamespacedName{owner1, writer, reader}, again,
		"the instances that applied, owned or read there are reconciled again")
	assert.Nil(t, e.places.named("spoke-1"), "nothing is remembered of spoke-1")
	assert.Equal(t, 1, cancelled, "its reference's watch stopped")
	assert.Empty(t, e.refs.scoped)
	assert.Equal(t, []types.NamespacedName{reader}, e.refs.referrers("spoke-1", cmGVK, objectNamed("ns", "source")),
		"the reader still reads there: its next evaluation watches again")
	fresh := e.places.of(e, spoke1.c)
	assert.False(t, fresh.memory.unchanged(cmKey, 7), "the next reconcile applies there again")
	assert.Empty(t, fresh.owned.ownedBy("uid-w", "spoke-1"))
	assert.True(t, spoke2.memory.unchanged(cmKey, 7), "spoke-2 keeps its memory")
	assert.Equal(t, spoke2, e.places.named("spoke-2"))
}

// A kind whose watch starts or stops failing in a cluster is forgotten
// there (the cluster may have lost its state meanwhile): each of its
// children is applied again, an apply in flight is not remembered, and
// the instances are requeued; other kinds and clusters keep their memory.
func TestApplyMemoryForgetsAKindWhoseWatchHealthChanged(t *testing.T) {
	var requeued []types.NamespacedName
	e := New(Config{
		Graph: &graph.Graph{Name: "unit"}, Home: NewCluster("", nil), Context: context.Background(),
		Enqueue: func(key types.NamespacedName) { requeued = append(requeued, key) },
		Options: Options{OrphanGrace: -1},
	})
	left, right := e.places.of(e, NewCluster("spoke-1", nil)), e.places.of(e, NewCluster("spoke-2", nil))
	secretKey := newChildKey(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, "ns", "a")
	inflightKey := newChildKey(cmKey.gvk(), "ns", "b")
	applyOnce(left, cmKey, 7, "10")
	applyOnce(left, secretKey, 7, "11")
	applyOnce(right, cmKey, 7, "20")
	left.memory.begin(inflightKey, owner1)

	left.watches.WatchHealthChanged(cmKey.gvk())
	assert.False(t, left.memory.unchanged(cmKey, 7), "a child of the kind is applied again")
	assert.True(t, left.memory.unchanged(secretKey, 7), "another kind keeps its memory")
	assert.True(t, right.memory.unchanged(cmKey, 7), "another cluster keeps its memory")
	assert.Equal(t, []types.NamespacedName{owner1}, requeued, "the owner is reconciled again")
	assert.True(t, left.memory.endWithoutAnswer(inflightKey, 7, applied("12"), nil), "the apply in flight asks for another")
	assert.False(t, left.memory.unchanged(inflightKey, 7), "and is not remembered")
}
