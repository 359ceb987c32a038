package hubgraph

import (
	"encoding/json"
	"hash/fnv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// applyMemory is what the hub remembers of its applies, per child in each
// target cluster: the resourceVersion the API server answered, the hash of
// what was applied and the instance it was applied for. It serves two
// purposes:
//
//   - the child watch's event of our own apply requeues nothing: only a
//     version we did not write (drift, a deletion, somebody else's write
//     racing ours) does;
//   - a child whose desired form did not change, that nobody wrote since
//     and whose answer nothing in the graph reads (graph.Graph.Reads) is
//     not applied again. A child whose answer is read is always applied:
//     the answer is what expressions see, and it is not kept here.
//
// An entry older than Options.Resync is not trusted, so that every child
// is applied again at least that often, event or not. Entries go when the
// child's deletion is seen, when our apply fails, or when the instance is
// gone (forgetOwner), so children left in a cluster that cannot be reached
// are not remembered for ever.
type applyMemory struct {
	maxAge time.Duration
	now    func() time.Time // time.Now but in tests

	// mu guards m and byOwner.
	mu      sync.Mutex
	m       map[childID]*applied
	byOwner map[types.NamespacedName]map[childID]struct{}
}

// applied is our last apply of one child. rv is its answer's version, ""
// once something else was seen (the apply no longer stands); hash 0 means
// "apply again" even when it stands. While an apply is in flight, the
// versions the watch reports are collected in seen: any that is not the
// apply's answer means somebody else wrote too.
type applied struct {
	cl       cluster.Cluster // the engagement it was applied through
	owner    types.NamespacedName
	hash     uint64
	rv       string
	at       time.Time
	inflight int
	seen     []string
}

// deletedRV is noted in seen when the child is deleted during our apply.
const deletedRV = "<deleted>"

func newApplyMemory(maxAge time.Duration) *applyMemory {
	return &applyMemory{maxAge: maxAge, now: time.Now, m: map[childID]*applied{}, byOwner: map[types.NamespacedName]map[childID]struct{}{}}
}

// hashOf is the FNV-64a hash of u's JSON form, never 0.
func hashOf(u *unstructured.Unstructured) (uint64, error) {
	b, err := json.Marshal(u.Object)
	if err != nil {
		return 0, err
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	if sum := h.Sum64(); sum != 0 {
		return sum, nil
	}
	return 1, nil
}

func childOf(name string, gvk schema.GroupVersionKind, u *unstructured.Unstructured) childID {
	return childID{cluster: name, gvk: gvk, namespace: u.GetNamespace(), name: u.GetName()}
}

// unchanged reports whether our last apply of key, through cl, was of hash
// and still stands: nothing in flight, no other version seen since, and
// not older than maxAge.
func (a *applyMemory) unchanged(key childID, cl cluster.Cluster, hash uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.m[key]
	return st != nil && st.inflight == 0 && st.rv != "" && st.hash != 0 && st.hash == hash && st.cl == cl &&
		a.now().Sub(st.at) < a.maxAge
}

// begin notes that an apply of key for owner, through cl, is in flight.
func (a *applyMemory) begin(key childID, cl cluster.Cluster, owner types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.m[key]
	switch {
	case st == nil:
		st = &applied{cl: cl, owner: owner}
		a.m[key] = st
	case st.cl != cl: // a new engagement: nothing of the old one stands
		st.cl, st.hash, st.rv, st.seen = cl, 0, "", nil
	}
	if old := a.byOwner[st.owner]; old != nil && st.owner != owner {
		delete(old, key)
		if len(old) == 0 {
			delete(a.byOwner, st.owner)
		}
	}
	st.owner = owner
	if a.byOwner[owner] == nil {
		a.byOwner[owner] = map[childID]struct{}{}
	}
	a.byOwner[owner][key] = struct{}{}
	st.inflight++
}

// drop forgets key; a.mu held.
func (a *applyMemory) drop(key childID, st *applied) {
	delete(a.m, key)
	if set := a.byOwner[st.owner]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(a.byOwner, st.owner)
		}
	}
}

// forgetOwner forgets the children applied for owner, but those with an
// apply in flight.
func (a *applyMemory) forgetOwner(owner types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key := range a.byOwner[owner] {
		if st := a.m[key]; st != nil && st.inflight == 0 {
			a.drop(key, st)
		}
	}
}

// end records the outcome of an apply begun with begin: answer is the API
// server's (nil on error), and hash 0 asks for the next reconcile to apply
// again. It reports whether somebody else wrote the child while we
// applied, in which case its owner must be reconciled again.
func (a *applyMemory) end(key childID, hash uint64, answer *unstructured.Unstructured, err error) (raced bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.m[key]
	if st == nil {
		return false
	}
	st.inflight--
	if err != nil {
		st.hash, st.rv, st.seen = 0, "", nil
		if st.inflight == 0 {
			a.drop(key, st)
		}
		return false
	}
	if answer.GetDeletionTimestamp() != nil {
		hash = 0 // being deleted: the next reconcile looks again
	}
	st.hash, st.rv, st.at = hash, answer.GetResourceVersion(), a.now()
	for _, rv := range st.seen {
		if rv != st.rv {
			raced = true
		}
	}
	st.seen = nil
	if raced {
		st.hash, st.rv = 0, ""
	}
	return raced
}

// observed records a watch event of key at version rv. It reports whether
// the child's owner must be reconciled (false for the echo of our own
// apply, or while an apply is in flight: end decides then), and the owner
// we applied it for, if we did.
func (a *applyMemory) observed(key childID, rv string) (requeue bool, owner types.NamespacedName, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.m[key]
	switch {
	case st == nil:
		return true, types.NamespacedName{}, false
	case st.inflight > 0:
		st.seen = append(st.seen, rv)
		return false, st.owner, true
	case st.rv != "" && st.rv == rv:
		return false, st.owner, true
	default:
		st.hash, st.rv = 0, ""
		return true, st.owner, true
	}
}

// deleted records the child's deletion: what we applied is gone. It
// returns the owner we applied it for, if we did.
func (a *applyMemory) deleted(key childID) (owner types.NamespacedName, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.m[key]
	if st == nil {
		return types.NamespacedName{}, false
	}
	if st.inflight > 0 {
		st.seen = append(st.seen, deletedRV)
		return st.owner, true
	}
	a.drop(key, st)
	return st.owner, true
}

// size is how many children are remembered.
func (a *applyMemory) size() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.m)
}

// holds reports whether we applied, for owner, a child of gvk in the
// named cluster whose deletion has not been seen: one the cluster's cache
// may not show yet.
func (a *applyMemory) holds(owner types.NamespacedName, cluster string, gvk schema.GroupVersionKind) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key := range a.byOwner[owner] {
		if key.cluster == cluster && key.gvk == gvk {
			return true
		}
	}
	return false
}
