package instance

import (
	"cmp"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ownedIndex is an engine's index of its children in one cluster by owning
// instance, kept from the child watches (objects labelled as the graph's
// and written by our field manager) and from our own applies, so that
// finding an instance's children never lists anything. It also remembers which kinds
// outside the graph were listed for an instance's children (inventory.go),
// so that each is listed once.
type ownedIndex struct {
	mu      sync.Mutex
	owned   map[childKey]ownedChild
	byOwner map[types.UID][]childKey
	// listed records, per instance UID, the kinds outside the graph that
	// were listed for its children.
	listed map[types.UID]map[schema.GroupVersionKind]bool
}

// ownedChild is one entry of the index.
type ownedChild struct {
	owner types.UID
	node  string
	uid   types.UID // the child's own UID, the precondition of its deletion
}

func newOwnedIndex() *ownedIndex {
	return &ownedIndex{
		owned:   map[childKey]ownedChild{},
		byOwner: map[types.UID][]childKey{},
		listed:  map[types.UID]map[schema.GroupVersionKind]bool{},
	}
}

// record notes that key, the object uid, belongs to owner, rendered by
// node.
func (x *ownedIndex) record(key childKey, owner types.UID, node string, uid types.UID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	old, ok := x.owned[key]
	if ok && old.owner != owner {
		x.unlinkLocked(old.owner, key)
	}
	x.owned[key] = ownedChild{owner: owner, node: node, uid: uid}
	if !ok || old.owner != owner {
		x.byOwner[owner] = append(x.byOwner[owner], key)
	}
}

// drop forgets a child that is gone, and returns the owner it had.
func (x *ownedIndex) drop(key childKey) (types.UID, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	old, ok := x.owned[key]
	if !ok {
		return "", false
	}
	delete(x.owned, key)
	x.unlinkLocked(old.owner, key)
	return old.owner, true
}

// unlinkLocked removes key from owner's children. An instance has few
// children, so a slice costs less than a set and a scan little.
func (x *ownedIndex) unlinkLocked(owner types.UID, key childKey) {
	keys := slices.DeleteFunc(x.byOwner[owner], func(k childKey) bool { return k == key })
	if len(keys) == 0 {
		delete(x.byOwner, owner)
		return
	}
	x.byOwner[owner] = keys
}

// ownedBy returns owner's children in a stable order.
func (x *ownedIndex) ownedBy(owner types.UID, cluster string) []Entry {
	x.mu.Lock()
	out := make([]Entry, 0, len(x.byOwner[owner]))
	for _, key := range x.byOwner[owner] {
		out = append(out, entryOf(cluster, key, x.owned[key].node))
	}
	x.mu.Unlock()
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.APIVersion, b.APIVersion),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// owners returns the UIDs of the instances with children in the index.
func (x *ownedIndex) owners() []types.UID {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]types.UID, 0, len(x.byOwner))
	for uid := range x.byOwner {
		out = append(out, uid)
	}
	return out
}

// keysOf returns owner's children's keys.
func (x *ownedIndex) keysOf(owner types.UID) []childKey {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.byOwner[owner])
}

// owns reports whether the index still has key.
func (x *ownedIndex) owns(key childKey) bool {
	_, ok := x.indexed(key)
	return ok
}

// indexed returns the index's entry for key.
func (x *ownedIndex) indexed(key childKey) (ownedChild, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	c, ok := x.owned[key]
	return c, ok
}

// recordsOwn reports whether the index says that the object uid at key is
// owner's.
func (x *ownedIndex) recordsOwn(key childKey, owner, uid types.UID) bool {
	c, ok := x.indexed(key)
	return ok && c.owner == owner && (c.uid == "" || c.uid == uid)
}

func (x *ownedIndex) wasListed(uid types.UID, k schema.GroupVersionKind) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.listed[uid][k]
}

func (x *ownedIndex) markListed(uid types.UID, k schema.GroupVersionKind) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.listed[uid] == nil {
		x.listed[uid] = map[schema.GroupVersionKind]bool{}
	}
	x.listed[uid][k] = true
}

// forgetListed forgets the kinds listed for an instance that is gone.
func (x *ownedIndex) forgetListed(uid types.UID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.listed, uid)
}
