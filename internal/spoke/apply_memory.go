package spoke

import (
	"sync"
	"unique"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// applyMemory is a member's memory of what it applied, which lets a
// reconcile skip applies that would change nothing: per child, the hash of
// its desired form, the resourceVersion and the API server's answer to our
// last apply (compressed, observed.go). The child watches invalidate it
// when somebody else writes a child or deletes it (drift). Our own writes
// of instances are remembered by instanceMemory.
type applyMemory struct {
	mu       sync.Mutex
	children map[childKey]*childState
}

func newApplyMemory() *applyMemory {
	return &applyMemory{children: map[childKey]*childState{}}
}

// childKey identifies a child in one cluster. It is held several times
// per child (apply memory, owned index), so its kind is a handle to one
// shared copy rather than three strings.
type childKey struct {
	kind            unique.Handle[schema.GroupVersionKind]
	namespace, name string
}

func newChildKey(gvk schema.GroupVersionKind, namespace, name string) childKey {
	return childKey{kind: unique.Make(gvk), namespace: namespace, name: name}
}

func (k childKey) gvk() schema.GroupVersionKind { return k.kind.Value() }

// childState is what we last applied for a child. hash 0 means "apply
// again". While an apply is in flight, the resourceVersions the watch reports
// are collected in seen: any that differs from the apply's result means
// somebody else wrote too.
type childState struct {
	owner    types.NamespacedName
	hash     desiredHash
	rv       string
	observed []byte // the apply's answer, compressed (observed.go)
	inflight int
	seen     []string
}

const deletedRV = "<deleted>"

// desiredHash is the FNV-64a hash of a child's desired form, never 0.
type desiredHash uint64

// applied returns the observed object of our last apply if desired (hash)
// has not changed and nobody has touched the child since.
func (a *applyMemory) applied(key childKey, hash desiredHash) (map[string]any, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.children[key]
	if st == nil || st.inflight > 0 || st.hash == 0 || st.hash != hash {
		return nil, false
	}
	return answerCodec.decode(key.gvk(), st.observed)
}

// begin notes that an apply of key for owner is in flight.
func (a *applyMemory) begin(key childKey, owner types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.children[key]
	if st == nil {
		st = &childState{}
		a.children[key] = st
	}
	st.owner = owner
	st.inflight++
}

// end records an apply's outcome. It reports whether another writer raced
// with us, in which case the owner must be reconciled again.
func (a *applyMemory) end(key childKey, hash desiredHash, obj *unstructured.Unstructured, err error) bool {
	var observed []byte
	if err == nil {
		observed = answerCodec.encode(key.gvk(), obj.Object) // not under the lock: it compresses
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.children[key]
	if st == nil {
		return false
	}
	st.inflight--
	if err != nil {
		st.hash = 0
		if st.rv == "" && st.inflight == 0 {
			delete(a.children, key) // never applied: nothing to remember
		}
		return false
	}
	st.hash, st.rv, st.observed = hash, obj.GetResourceVersion(), observed
	if st.observed == nil {
		st.hash = 0
	}
	raced := false
	for _, rv := range st.seen {
		if rv != st.rv {
			raced = true
		}
	}
	st.seen = nil
	if raced {
		st.hash = 0
	}
	return raced
}

// observed records a watch event on a child and reports whether its owner
// must be reconciled: not when the event echoes our own apply.
func (a *applyMemory) observed(key childKey, rv string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.children[key]
	switch {
	case st == nil:
		return true
	case st.inflight > 0:
		st.seen = append(st.seen, rv)
		return false
	case st.rv == rv && st.hash != 0:
		return false
	default:
		st.hash = 0
		return true
	}
}

// deleted records a child's deletion event: what was applied is gone.
func (a *applyMemory) deleted(key childKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.children[key]
	if st == nil {
		return
	}
	if st.inflight > 0 {
		st.seen = append(st.seen, deletedRV)
		return
	}
	delete(a.children, key)
}

// forget drops what is remembered of key.
func (a *applyMemory) forget(key childKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.children, key)
}

// forgetOwned drops what is remembered of keys that owner applied and
// that no apply is in flight for.
func (a *applyMemory) forgetOwned(owner types.NamespacedName, keys []childKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range keys {
		if st := a.children[k]; st != nil && st.owner == owner && st.inflight == 0 {
			delete(a.children, k)
		}
	}
}
