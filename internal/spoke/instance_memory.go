package spoke

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// writtenTTL bounds how long our own copy of an instance is preferred to the
// cache's, in case the cache never reports that exact version (a relist can
// skip it).
const writtenTTL = 30 * time.Second

// instanceMemory is what a member remembers of each instance: the name
// each UID has (children name their owner by UID), what the instance watch
// last delivered under each name, and our own last write of an instance
// until the cache has caught up with it, so that a reconcile never works
// from an older copy than one it wrote.
type instanceMemory struct {
	mu       sync.Mutex
	owners   map[types.UID]types.NamespacedName
	lastSeen map[types.NamespacedName]seenInstance
	written  map[types.NamespacedName]*writtenInstance
}

// seenInstance is what the instance watch last delivered for a name.
type seenInstance struct {
	uid types.UID
	rv  string
}

// writtenInstance is an instance as one of our writes returned it.
type writtenInstance struct {
	obj *unstructured.Unstructured
	at  time.Time
}

func newInstanceMemory() *instanceMemory {
	return &instanceMemory{
		owners:   map[types.UID]types.NamespacedName{},
		lastSeen: map[types.NamespacedName]seenInstance{},
		written:  map[types.NamespacedName]*writtenInstance{},
	}
}

// observe notes an instance the cache delivered: its owner index, and that
// the cache caught up with our write. It returns the UID the name had
// before when a new instance took the name, else "".
func (x *instanceMemory) observe(u *unstructured.Unstructured) (replaced types.UID) {
	key := keyOf(u)
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.lastSeen[key]; ok && old.uid != u.GetUID() {
		delete(x.owners, old.uid) // the name was given to a new instance
		replaced = old.uid
	}
	x.owners[u.GetUID()] = key
	x.lastSeen[key] = seenInstance{uid: u.GetUID(), rv: u.GetResourceVersion()}
	if w := x.written[key]; w != nil && w.obj.GetResourceVersion() == u.GetResourceVersion() {
		delete(x.written, key)
	}
	return replaced
}

// delivered reports whether what the instance watch last delivered under
// key is the instance uid at version rv exactly. A caller that starts a
// reconcile when it is not starts at worst one too many.
func (x *instanceMemory) delivered(key types.NamespacedName, uid types.UID, rv string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	seen, ok := x.lastSeen[key]
	return ok && seen.uid == uid && seen.rv == rv
}

// remember keeps our latest write of an instance until the cache has it
// (which may already be the case: the watch can beat the response).
func (x *instanceMemory) remember(u *unstructured.Unstructured) {
	key := keyOf(u)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lastSeen[key].rv == u.GetResourceVersion() {
		delete(x.written, key)
		return
	}
	x.written[key] = &writtenInstance{obj: u.DeepCopy(), at: time.Now()}
}

// fresher returns our own copy of the instance when it is newer than the
// cached one, else cached.
func (x *instanceMemory) fresher(cached *unstructured.Unstructured) *unstructured.Unstructured {
	key := keyOf(cached)
	x.mu.Lock()
	defer x.mu.Unlock()
	w := x.written[key]
	if w == nil {
		return cached
	}
	if w.obj.GetUID() != cached.GetUID() || w.obj.GetResourceVersion() == cached.GetResourceVersion() ||
		time.Since(w.at) > writtenTTL {
		delete(x.written, key)
		return cached
	}
	return w.obj.DeepCopy()
}

// ours returns our own last write of the instance under key while it is
// remembered (the cache has not shown it yet), else nil.
func (x *instanceMemory) ours(key types.NamespacedName) *unstructured.Unstructured {
	x.mu.Lock()
	defer x.mu.Unlock()
	w := x.written[key]
	if w == nil || time.Since(w.at) > writtenTTL {
		return nil
	}
	return w.obj.DeepCopy()
}

// ownerOf maps a child's labels to its instance: by UID first (names may be
// too long for a label value), then by the name labels.
func (x *instanceMemory) ownerOf(l map[string]string) (types.NamespacedName, bool) {
	if key, ok := x.instanceOf(types.UID(l[contract.LabelInstanceUID])); ok {
		return key, true
	}
	name := l[contract.LabelInstanceName]
	return types.NamespacedName{Namespace: l[contract.LabelInstanceNamespace], Name: name}, name != ""
}

// instanceOf returns the instance known under uid.
func (x *instanceMemory) instanceOf(uid types.UID) (types.NamespacedName, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	key, ok := x.owners[uid]
	return key, ok
}

// forget drops what is remembered of the instance under key, known by uid
// or by the UID the watch last delivered under its name, and returns those
// two UIDs (either may be empty).
func (x *instanceMemory) forget(key types.NamespacedName, uid types.UID) []types.UID {
	x.mu.Lock()
	defer x.mu.Unlock()
	uids := []types.UID{uid, x.lastSeen[key].uid}
	for _, u := range uids {
		if u != "" && x.owners[u] == key {
			delete(x.owners, u)
		}
	}
	delete(x.written, key)
	delete(x.lastSeen, key)
	return uids
}
