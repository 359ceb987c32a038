package instance

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// Instances is what an engine knows of the instances its driver's
// instance watch delivered: the name each UID has (children name their
// owner by UID, and a name label may be shortened), and what was last
// delivered under each name. The driver tells it what its watch delivers
// (Saw, Gone); the engine's orphanage learns from it which instances
// exist. Its methods are safe for concurrent use.
type Instances struct {
	orphans *orphanage

	mu       sync.Mutex
	owners   map[types.UID]types.NamespacedName
	lastSeen map[types.NamespacedName]seenInstance
}

// seenInstance is what the instance watch last delivered for a name.
type seenInstance struct {
	uid types.UID
	rv  string
}

func newInstances(orphans *orphanage) *Instances {
	return &Instances{
		orphans:  orphans,
		owners:   map[types.UID]types.NamespacedName{},
		lastSeen: map[types.NamespacedName]seenInstance{},
	}
}

// Instances is what the engine knows of the instances the driver's watch
// delivered.
func (e *Engine) Instances() *Instances { return e.instances }

// Saw notes an instance the driver's instance watch delivered (added or
// updated). A UID whose name a new instance took is suspected of leaving
// orphans.
func (x *Instances) Saw(u *unstructured.Unstructured) {
	if replaced := x.observe(u); replaced != "" {
		x.orphans.suspect(replaced)
	}
}

// Gone notes an instance the driver's instance watch saw deleted: its
// children are looked at once Options.OrphanGrace has passed (orphans.go),
// in case its finalizer was removed by hand.
func (x *Instances) Gone(u *unstructured.Unstructured) {
	x.orphans.suspect(u.GetUID())
}

// ForgetInstance drops everything remembered for an instance that is
// gone, by uid and by the UID the watch last delivered under its name: its
// owner entry, its children's apply memory (found through the owned
// index, not by a scan, so that deleting many instances costs each only
// its own children), its references and its resync.
func (e *Engine) ForgetInstance(key types.NamespacedName, uid types.UID) {
	for _, u := range e.instances.forget(key, uid) {
		if u == "" {
			continue
		}
		for _, p := range e.places.all() {
			p.owned.forgetListed(u)
			p.memory.forgetOwned(key, p.owned.keysOf(u))
		}
	}
	e.refs.forget(key)
	e.resync.forget(key)
	e.writes.Forget(key)
}

// observe notes an instance the cache delivered. It returns the UID the
// name had before when a new instance took the name, else "".
func (x *Instances) observe(u *unstructured.Unstructured) (replaced types.UID) {
	key := keyOf(u)
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.lastSeen[key]; ok && old.uid != u.GetUID() {
		delete(x.owners, old.uid) // the name was given to a new instance
		replaced = old.uid
	}
	x.owners[u.GetUID()] = key
	x.lastSeen[key] = seenInstance{uid: u.GetUID(), rv: u.GetResourceVersion()}
	return replaced
}

// Delivered reports whether what the instance watch last delivered under
// key is the instance uid at version rv exactly. A caller that starts a
// reconcile when it is not starts at worst one too many.
func (x *Instances) Delivered(key types.NamespacedName, uid types.UID, rv string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	seen, ok := x.lastSeen[key]
	return ok && seen.uid == uid && seen.rv == rv
}

// ownerOf maps a child's labels to its instance: by UID first (names may be
// too long for a label value), then by the name labels.
func (x *Instances) ownerOf(l map[string]string) (types.NamespacedName, bool) {
	if key, ok := x.instanceOf(types.UID(l[contract.LabelInstanceUID])); ok {
		return key, true
	}
	name := l[contract.LabelInstanceName]
	return types.NamespacedName{Namespace: l[contract.LabelInstanceNamespace], Name: name}, name != ""
}

// instanceOf returns the instance known under uid.
func (x *Instances) instanceOf(uid types.UID) (types.NamespacedName, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	key, ok := x.owners[uid]
	return key, ok
}

// forget drops what is remembered of the instance under key, known by uid
// or by the UID the watch last delivered under its name, and returns those
// two UIDs (either may be empty).
func (x *Instances) forget(key types.NamespacedName, uid types.UID) []types.UID {
	x.mu.Lock()
	defer x.mu.Unlock()
	uids := []types.UID{uid, x.lastSeen[key].uid}
	for _, u := range uids {
		if u != "" && x.owners[u] == key {
			delete(x.owners, u)
		}
	}
	delete(x.lastSeen, key)
	return uids
}
