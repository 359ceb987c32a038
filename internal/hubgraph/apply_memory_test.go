package hubgraph

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

var (
	cmGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	owner1 = types.NamespacedName{Namespace: "ns", Name: "pair-1"}
)

func answer(rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetResourceVersion(rv)
	return u
}

// applyOnce records one apply of key through cl, answered at rv.
func applyOnce(a *applyMemory, key childID, cl cluster.Cluster, hash uint64, rv string) bool {
	a.begin(key, cl, owner1)
	return a.end(key, hash, answer(rv), nil)
}

func TestApplyMemoryEchoRequeuesNothing(t *testing.T) {
	a := newApplyMemory(time.Hour)
	var cl cluster.Cluster
	key := childID{cluster: "spoke-1", gvk: cmGVK, namespace: "ns", name: "left"}
	require.False(t, applyOnce(a, key, cl, 7, "10"))
	requeue, owner, known := a.observed(key, "10")
	assert.False(t, requeue, "the echo of our own apply")
	assert.True(t, known)
	assert.Equal(t, owner1, owner)
	assert.True(t, a.unchanged(key, cl, 7), "an apply that stands is not made again")
	assert.False(t, a.unchanged(key, cl, 8), "a changed desired form is applied")

	requeue, owner, _ = a.observed(key, "11") // somebody else wrote it
	assert.True(t, requeue)
	assert.Equal(t, owner1, owner)
	assert.False(t, a.unchanged(key, cl, 7), "drift is applied over")
	requeue, _, _ = a.observed(key, "11")
	assert.True(t, requeue, "a version we did not write never counts as ours")
}

func TestApplyMemoryRaceDuringApply(t *testing.T) {
	a := newApplyMemory(time.Hour)
	var cl cluster.Cluster
	key := childID{cluster: "spoke-1", gvk: cmGVK, namespace: "ns", name: "left"}
	a.begin(key, cl, owner1)
	requeue, _, _ := a.observed(key, "10") // our own, before the answer
	assert.False(t, requeue, "end decides while an apply is in flight")
	assert.False(t, a.end(key, 7, answer("10"), nil), "only our own version was seen")
	assert.True(t, a.unchanged(key, cl, 7))

	a.begin(key, cl, owner1)
	a.observed(key, "11") // somebody else's
	a.observed(key, "12") // ours
	assert.True(t, a.end(key, 7, answer("12"), nil), "another writer raced us")
	assert.False(t, a.unchanged(key, cl, 7))
}

func TestApplyMemoryForgets(t *testing.T) {
	a := newApplyMemory(time.Hour)
	var cl cluster.Cluster
	left := childID{cluster: "spoke-1", gvk: cmGVK, namespace: "ns", name: "left"}
	right := childID{cluster: "spoke-2", gvk: cmGVK, namespace: "ns", name: "right"}
	applyOnce(a, left, cl, 7, "10")
	applyOnce(a, right, cl, 7, "20")

	owner, known := a.deleted(left)
	assert.True(t, known)
	assert.Equal(t, owner1, owner)
	assert.False(t, a.unchanged(left, cl, 7), "a deleted child is applied again")

	a.begin(right, cl, owner1)
	assert.False(t, a.end(right, 7, nil, errors.New("timeout")))
	assert.False(t, a.unchanged(right, cl, 7), "a failed apply is made again")

	applyOnce(a, right, cl, 7, "21")
	a.forgetOwner(owner1)
	assert.Equal(t, 0, a.size(), "nothing of a gone instance is remembered")
	assert.Empty(t, a.byOwner)

	now := time.Now()
	a.now = func() time.Time { return now }
	applyOnce(a, left, cl, 7, "10")
	assert.True(t, a.unchanged(left, cl, 7))
	now = now.Add(time.Hour)
	assert.False(t, a.unchanged(left, cl, 7), "an apply as old as the resync is made again")
}

// holds says what a deletion must ask a cluster about live: a child we
// applied there for the owner whose deletion we have not seen.
func TestApplyMemoryHolds(t *testing.T) {
	a := newApplyMemory(time.Hour)
	key := childID{cluster: "spoke-2", gvk: cmGVK, namespace: "ns", name: "pair-1-right"}
	assert.False(t, a.holds(owner1, "spoke-2", cmGVK), "nothing applied")
	applyOnce(a, key, nil, 1, "7")
	assert.True(t, a.holds(owner1, "spoke-2", cmGVK))
	assert.False(t, a.holds(owner1, "spoke-1", cmGVK), "another cluster")
	assert.False(t, a.holds(owner1, "spoke-2", schema.GroupVersionKind{Version: "v1", Kind: "Secret"}), "another kind")
	assert.False(t, a.holds(types.NamespacedName{Namespace: "ns", Name: "pair-2"}, "spoke-2", cmGVK), "another owner")
	a.deleted(key)
	assert.False(t, a.holds(owner1, "spoke-2", cmGVK), "its deletion was seen")
}
