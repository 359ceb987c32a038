package instance

import (
	"sync"
	"unique"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// applyMemory is an engine's memory of what it applied in one cluster,
// which lets a reconcile skip applies that would change nothing: per
// child, the hash of its desired form, the resourceVersion and, when
// something in the graph reads it (graph.Graph.Reads), the API server's
// answer to our last apply (compressed, observed.go). The child watches
// invalidate it when somebody else writes a child or deletes it (drift),
// and the watches' health forgets a kind whose watch starts or stops
// failing (the cluster may have lost its state meanwhile: watch.go).
// Our own writes of instances are remembered by Writes.
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
	owner types.NamespacedName
	hash  desiredHash
	rv    string
	// observed is the apply's answer, compressed (observed.go); nil when
	// the apply did not keep it (endWithoutAnswer).
	observed []byte
	inflight int
	seen     []string
}

const deletedRV = "<deleted>"

// desiredHash is the FNV-64a hash of a child's desired form, never 0.
type desiredHash uint64

// applied returns the observed object of our last apply if desired (hash)
// has not changed, nobody has touched the child since, and the answer was
// kept.
func (a *applyMemory) applied(key childKey, hash desiredHash) (map[string]any, bool) {
	a.mu.Lock()
	st := a.current(key, hash)
	if st == nil || st.observed == nil {
		a.mu.Unlock()
		return nil, false
	}
	observed := st.observed
	a.mu.Unlock()
	return answerCodec.decode(key.gvk(), observed) // not under the lock: it decompresses
}

// unchanged reports whether desired (hash) has not changed since our last
// apply and nobody has touched the child since: for a child whose answer
// nothing reads.
func (a *applyMemory) unchanged(key childKey, hash desiredHash) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.current(key, hash) != nil
}

// current is key's state if our last apply of hash still stands; a.mu held.
func (a *applyMemory) current(key childKey, hash desiredHash) *childState {
	st := a.children[key]
	if st == nil || st.inflight > 0 || st.hash == 0 || st.hash != hash {
		return nil
	}
	return st
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

// end records an apply's outcome, keeping the API server's answer for
// applied. It reports whether another writer raced with us, in which case
// the owner must be reconciled again.
func (a *applyMemory) end(key childKey, hash desiredHash, obj *unstructured.Unstructured, err error) bool {
	var observed []byte
	if err == nil {
		observed = answerCodec.encode(key.gvk(), obj.Object) // not under the lock: it compresses
		if observed == nil {
			hash = 0 // not encoded: applied again next time
		}
	}
	return a.record(key, hash, obj, err, observed)
}

// endWithoutAnswer is end for a child whose answer nothing reads: only
// unchanged can tell the apply stands, and nothing of the answer is kept.
// An answer that shows the child being deleted is not remembered, so that
// the next reconcile applies again and waits for the deletion.
func (a *applyMemory) endWithoutAnswer(key childKey, hash desiredHash, obj *unstructured.Unstructured, err error) bool {
	if err == nil && obj.GetDeletionTimestamp() != nil {
		hash = 0
	}
	return a.record(key, hash, obj, err, nil)
}

// record notes an apply's outcome, with observed its answer as kept (nil
// for none); hash 0 asks for the next apply to be made.
func (a *applyMemory) record(key childKey, hash desiredHash, obj *unstructured.Unstructured, err error, observed []byte) bool {
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

// lostRV is what forgetKind notes in an apply in flight: whatever it
// answers, the next reconcile applies again.
const lostRV = "<lost>"

// forgetKind drops what is remembered of every child of kind gvk (an apply
// in flight is not remembered when it ends) and returns their owners: the
// cluster may no longer hold what was applied there.
func (a *applyMemory) forgetKind(gvk schema.GroupVersionKind) []types.NamespacedName {
	kind := unique.Make(gvk)
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[types.NamespacedName]bool{}
	var out []types.NamespacedName
	for key, st := range a.children {
		if key.kind != kind {
			continue
		}
		if !seen[st.owner] {
			seen[st.owner] = true
			out = append(out, st.owner)
		}
		if st.inflight > 0 {
			st.seen = append(st.seen, lostRV)
			continue
		}
		delete(a.children, key)
	}
	return out
}

// owners returns the instances something is remembered for.
func (a *applyMemory) owners() []types.NamespacedName {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[types.NamespacedName]bool{}
	var out []types.NamespacedName
	for _, st := range a.children {
		if !seen[st.owner] {
			seen[st.owner] = true
			out = append(out, st.owner)
		}
	}
	return out
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

// AnswerBytes is how many bytes of apply answers the engine keeps in its
// memories, in every cluster: what the answers of read nodes cost it.
func (e *Engine) AnswerBytes() int {
	total := 0
	for _, p := range e.places.all() {
		p.memory.mu.Lock()
		for _, st := range p.memory.children {
			total += len(st.observed)
		}
		p.memory.mu.Unlock()
	}
	return total
}
