package spoke

import (
	"time"
	"unique"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// This file is the member's memory of what it wrote, which lets a reconcile
// skip applies that would change nothing and never act on a cache older than
// its own last write.

// writtenTTL bounds how long our own copy of an instance is preferred to the
// cache's, in case the cache never reports that exact version (a relist can
// skip it).
const writtenTTL = 30 * time.Second

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

// appliedChild returns the observed object of our last apply if desired
// (hash) has not changed and nobody has touched the child since.
func (m *member) appliedChild(key childKey, hash desiredHash) (map[string]any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.children[key]
	if st == nil || st.inflight > 0 || st.hash == 0 || st.hash != hash {
		return nil, false
	}
	return answerCodec.decode(key.gvk(), st.observed)
}

func (m *member) beginApply(key childKey, owner types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.children[key]
	if st == nil {
		st = &childState{}
		m.children[key] = st
	}
	st.owner = owner
	st.inflight++
}

// endApply records an apply's outcome. It reports whether another writer
// raced with us, in which case the owner must be reconciled again.
func (m *member) endApply(key childKey, hash desiredHash, obj *unstructured.Unstructured, err error) bool {
	var observed []byte
	if err == nil {
		observed = answerCodec.encode(key.gvk(), obj.Object) // not under the lock: it compresses
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.children[key]
	if st == nil {
		return false
	}
	st.inflight--
	if err != nil {
		st.hash = 0
		if st.rv == "" && st.inflight == 0 {
			delete(m.children, key) // never applied: nothing to remember
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

// childObserved records a watch event on a child and reports whether its
// owner must be reconciled: not when the event echoes our own apply.
func (m *member) childObserved(key childKey, rv string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.children[key]
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

func (m *member) childDeleted(key childKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.children[key]
	if st == nil {
		return
	}
	if st.inflight > 0 {
		st.seen = append(st.seen, deletedRV)
		return
	}
	delete(m.children, key)
}

func (m *member) forgetChild(key childKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.children, key)
}

// writtenInstance is an instance as one of our writes returned it.
type writtenInstance struct {
	obj *unstructured.Unstructured
	at  time.Time
}

// remember keeps our latest write of an instance until the cache has it
// (which may already be the case: the watch can beat the response).
func (m *member) remember(u *unstructured.Unstructured) {
	key := keyOf(u)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastSeen[key].rv == u.GetResourceVersion() {
		delete(m.written, key)
		return
	}
	m.written[key] = &writtenInstance{obj: u.DeepCopy(), at: time.Now()}
}

// observeInstance notes an instance the cache delivered: its owner index,
// and that the cache caught up with our write.
func (m *member) observeInstance(u *unstructured.Unstructured) {
	key := keyOf(u)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.lastSeen[key]; ok && old.uid != u.GetUID() {
		delete(m.owners, old.uid) // the name was given to a new instance
		m.orphans.suspect(old.uid)
	}
	m.owners[u.GetUID()] = key
	m.lastSeen[key] = seenInstance{uid: u.GetUID(), rv: u.GetResourceVersion()}
	if w := m.written[key]; w != nil && w.obj.GetResourceVersion() == u.GetResourceVersion() {
		delete(m.written, key)
	}
}

// fresher returns our own copy of the instance when it is newer than the
// cached one, else cached.
func (m *member) fresher(cached *unstructured.Unstructured) *unstructured.Unstructured {
	key := keyOf(cached)
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.written[key]
	if w == nil {
		return cached
	}
	if w.obj.GetUID() != cached.GetUID() || w.obj.GetResourceVersion() == cached.GetResourceVersion() ||
		time.Since(w.at) > writtenTTL {
		delete(m.written, key)
		return cached
	}
	return w.obj.DeepCopy()
}

// ownerOf maps a child's labels to its instance: by UID first (names may be
// too long for a label value), then by the name labels.
func (m *member) ownerOf(l map[string]string) (types.NamespacedName, bool) {
	m.mu.Lock()
	key, ok := m.owners[types.UID(l[contract.LabelInstanceUID])]
	m.mu.Unlock()
	if ok {
		return key, true
	}
	name := l[contract.LabelInstanceName]
	return types.NamespacedName{Namespace: l[contract.LabelInstanceNamespace], Name: name}, name != ""
}

// instanceOf returns the instance known under uid.
func (m *member) instanceOf(uid types.UID) (types.NamespacedName, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key, ok := m.owners[uid]
	return key, ok
}

// resolvedRef is an external reference as last evaluated for an instance.
type resolvedRef struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	selector  labels.Selector
}

func (r resolvedRef) matches(gvk schema.GroupVersionKind, u *unstructured.Unstructured) bool {
	if r.gvk != gvk || (r.namespace != "" && r.namespace != u.GetNamespace()) {
		return false
	}
	if r.selector != nil {
		return r.selector.Matches(labels.Set(u.GetLabels()))
	}
	return r.name == u.GetName()
}

func (m *member) setRefs(key types.NamespacedName, refs []resolvedRef) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.useScopesLocked(key, m.refs[key], refs)
	m.unindexRefsLocked(key)
	if len(refs) == 0 {
		return
	}
	m.refs[key] = refs
	for _, r := range refs {
		set := m.refIndex[r.indexKey()]
		if set == nil {
			set = map[types.NamespacedName]struct{}{}
			m.refIndex[r.indexKey()] = set
		}
		set[key] = struct{}{}
	}
}

// unindexRefsLocked forgets key's references.
func (m *member) unindexRefsLocked(key types.NamespacedName) {
	for _, r := range m.refs[key] {
		ik := r.indexKey()
		delete(m.refIndex[ik], key)
		if len(m.refIndex[ik]) == 0 {
			delete(m.refIndex, ik)
		}
	}
	delete(m.refs, key)
}

// refKey indexes references: by kind, namespace and name for a reference
// by name; by kind alone (empty namespace and name, selector set) for one
// by selector, which must be matched against each object.
type refKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
	selector        bool
}

func (r resolvedRef) indexKey() refKey {
	if r.selector != nil {
		return refKey{gvk: r.gvk, selector: true}
	}
	return refKey{gvk: r.gvk, namespace: r.namespace, name: r.name}
}

// referrers returns the instances whose references match u: a lookup for
// references by name, a match of each selector reference of u's kind.
func (m *member) referrers(gvk schema.GroupVersionKind, u *unstructured.Unstructured) []types.NamespacedName {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []types.NamespacedName
	for key := range m.refIndex[refKey{gvk: gvk, namespace: u.GetNamespace(), name: u.GetName()}] {
		out = append(out, key)
	}
	for key := range m.refIndex[refKey{gvk: gvk, selector: true}] {
		for _, r := range m.refs[key] {
			if r.selector != nil && r.matches(gvk, u) {
				out = append(out, key)
				break
			}
		}
	}
	return out
}

// forgetInstance drops everything remembered for an instance that is gone,
// by uid and by the UID the watch last delivered under its name. Its
// children's apply memory is found through the owned index, not by a scan,
// so that deleting many instances costs each only its own children.
func (m *member) forgetInstance(key types.NamespacedName, uid types.UID) {
	m.mu.Lock()
	for _, u := range []types.UID{uid, m.lastSeen[key].uid} {
		if u != "" && m.owners[u] == key {
			delete(m.owners, u)
		}
		delete(m.listed, u)
		for _, k := range m.byOwner[u] {
			if st := m.children[k]; st != nil && st.owner == key && st.inflight == 0 {
				delete(m.children, k)
			}
		}
	}
	m.useScopesLocked(key, m.refs[key], nil)
	m.unindexRefsLocked(key)
	delete(m.written, key)
	delete(m.lastSeen, key)
	delete(m.resyncAt, key)
	m.mu.Unlock()
	m.setState(key, "")
}

func keyOf(u *unstructured.Unstructured) types.NamespacedName {
	return types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
}

func reconcileRequest(key types.NamespacedName) reconcile.Request {
	return reconcile.Request{NamespacedName: key}
}
