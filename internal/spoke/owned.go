package spoke

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// This file is the member's index of children by owning instance, kept from
// the child watches and from our own applies, so that finding an instance's
// children never lists anything.

// ownedChild is one entry of the index.
type ownedChild struct {
	owner types.UID
	node  string
	uid   types.UID // the child's own UID, the precondition of its deletion
}

// recordChild notes that key, the object uid, belongs to owner, rendered
// by node.
func (m *member) recordChild(key childKey, owner types.UID, node string, uid types.UID) {
	if owner == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.owned[key]
	if ok && old.owner != owner {
		m.unlinkLocked(old.owner, key)
	}
	m.owned[key] = ownedChild{owner: owner, node: node, uid: uid}
	if !ok || old.owner != owner {
		m.byOwner[owner] = append(m.byOwner[owner], key)
	}
	if _, live := m.owners[owner]; !live {
		m.orphans.suspect(owner) // orphans.go
	}
}

// dropChild forgets a child that is gone.
func (m *member) dropChild(key childKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.owned[key]
	if !ok {
		return
	}
	delete(m.owned, key)
	m.unlinkLocked(old.owner, key)
	m.orphans.childGone(old.owner)
}

// unlinkLocked removes key from owner's children. An instance has few
// children, so a slice costs less than a set and a scan little.
func (m *member) unlinkLocked(owner types.UID, key childKey) {
	keys := slices.DeleteFunc(m.byOwner[owner], func(k childKey) bool { return k == key })
	if len(keys) == 0 {
		delete(m.byOwner, owner)
		return
	}
	m.byOwner[owner] = keys
}

// ownedBy returns owner's children in a stable order.
func (m *member) ownedBy(owner types.UID) []InventoryEntry {
	m.mu.Lock()
	out := make([]InventoryEntry, 0, len(m.byOwner[owner]))
	for _, key := range m.byOwner[owner] {
		out = append(out, entryOf(key, m.owned[key].node))
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b InventoryEntry) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.APIVersion, b.APIVersion),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// owns reports whether the index still has key.
func (m *member) owns(key childKey) bool {
	_, ok := m.indexed(key)
	return ok
}

// indexed returns the index's entry for key.
func (m *member) indexed(key childKey) (ownedChild, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.owned[key]
	return c, ok
}
