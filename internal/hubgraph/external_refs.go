package hubgraph

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// externals is what a hub graph knows of its instances' external
// references: each instance's references as its last evaluation read
// them, in whatever cluster, indexed so that a change to a referenced
// object requeues exactly the instances that read it, and the watches of
// the (cluster, kind) pairs they read (external_watch.go). A watch lasts
// while some instance's last evaluation read that kind in that cluster.
//
// Its memory is bounded by the instances that exist: per instance, one
// entry per externalRef node its graph has (the RGD's size, not the
// tenant's), each remembering at most maxSeen versions; an instance's
// entries go when it is deleted or gone.
type externals struct {
	clusters Clusters
	enqueue  func(types.NamespacedName)
	// ctx is the server's, set by server.start before any reconcile can
	// call ensure, and only read afterwards.
	ctx context.Context

	// mu guards everything below.
	mu    sync.Mutex
	refs  map[types.NamespacedName][]extRef
	index map[extKey]map[types.NamespacedName]struct{}
	// uses counts, per (cluster, kind), the references indexed: a watch
	// whose count falls to 0 is removed.
	uses    map[watchKey]int
	watches map[watchKey]*extWatch
}

// maxSeen bounds how many objects' versions one reference by selector
// remembers; past it, any change to a matching object requeues.
const maxSeen = 64

// extRef is one external reference as an instance's evaluation read it.
type extRef struct {
	cluster   string
	gvk       schema.GroupVersionKind
	namespace string
	name      string          // "" for a reference by selector
	selector  labels.Selector // nil for a reference by name
	// seen holds the resourceVersion of each object the read returned
	// (none when a reference by name found nothing). An event that shows
	// an object as the instance saw it requeues nothing: the informer's
	// first list, and the echo of what it read already.
	seen map[types.NamespacedName]string
	// partial: seen does not cover everything the read returned (more
	// than maxSeen objects, or the read failed); every event about a
	// matching object requeues.
	partial bool
}

// extKey indexes references: by cluster, kind, namespace and name for a
// reference by name; by cluster, kind and namespace (selector set) for one
// by selector, matched against each object of its namespace.
type extKey struct {
	cluster         string
	gvk             schema.GroupVersionKind
	namespace, name string
	selector        bool
}

func (r *extRef) key() extKey {
	return extKey{cluster: r.cluster, gvk: r.gvk, namespace: r.namespace, name: r.name, selector: r.selector != nil}
}

func (r *extRef) watch() watchKey { return watchKey{cluster: r.cluster, gvk: r.gvk} }

// same reports whether r and o are one reference (what they saw aside).
func (r *extRef) same(o *extRef) bool {
	if r.key() != o.key() {
		return false
	}
	return r.selector == nil || r.selector.String() == o.selector.String()
}

// matches reports whether an object of r's kind and cluster, in namespace
// ns, named name, labelled l, is one r reads.
func (r *extRef) matches(ns, name string, l map[string]string) bool {
	if ns != r.namespace {
		return false
	}
	if r.selector != nil {
		return r.selector.Matches(labels.Set(l))
	}
	return name == r.name
}

// stale reports whether an object shown by an event (present with version
// rv, or absent) differs from what the instance saw of it.
func (r *extRef) stale(obj types.NamespacedName, present bool, rv string) bool {
	if r.partial {
		return true
	}
	saw, ok := r.seen[obj]
	if !present {
		return ok
	}
	return !ok || saw != rv
}

// sawObject records what a read returned: objects' keys and versions, at
// most maxSeen of them.
func (r *extRef) sawObject(obj types.NamespacedName, rv string) {
	if r.seen == nil {
		r.seen = map[types.NamespacedName]string{}
	}
	if len(r.seen) >= maxSeen {
		r.partial = true
		return
	}
	r.seen[obj] = rv
}

func newExternals(c Clusters, enqueue func(types.NamespacedName)) *externals {
	return &externals{
		clusters: c, enqueue: enqueue,
		refs:    map[types.NamespacedName][]extRef{},
		index:   map[extKey]map[types.NamespacedName]struct{}{},
		uses:    map[watchKey]int{},
		watches: map[watchKey]*extWatch{},
	}
}

// note records, while instance key is evaluated, one reference it read:
// events about its objects requeue the instance from now on (set makes
// the evaluation's references the instance's only ones once it is done).
func (x *externals) note(key types.NamespacedName, r extRef) {
	x.mu.Lock()
	defer x.mu.Unlock()
	refs := x.refs[key]
	for i := range refs {
		if refs[i].same(&r) {
			refs[i] = r
			return
		}
	}
	x.refs[key] = append(refs, r)
	x.indexLocked(key, &r)
}

// set makes refs, those of instance key's last evaluation, its only
// references; a watch nothing reads any more is removed.
func (x *externals) set(key types.NamespacedName, refs []extRef) {
	x.mu.Lock()
	defer x.mu.Unlock()
	old := x.refs[key]
	delete(x.refs, key)
	for i := range refs {
		x.indexLocked(key, &refs[i])
	}
	if len(refs) > 0 {
		x.refs[key] = refs
	}
	for i := range old {
		x.unindexLocked(key, &old[i])
	}
}

// forget drops instance key's references, as if it had none.
func (x *externals) forget(key types.NamespacedName) { x.set(key, nil) }

func (x *externals) indexLocked(key types.NamespacedName, r *extRef) {
	k := r.key()
	set := x.index[k]
	if set == nil {
		set = map[types.NamespacedName]struct{}{}
		x.index[k] = set
	}
	set[key] = struct{}{}
	x.uses[r.watch()]++
}

func (x *externals) unindexLocked(key types.NamespacedName, r *extRef) {
	k := r.key()
	if !x.referencedLocked(key, k) {
		delete(x.index[k], key)
		if len(x.index[k]) == 0 {
			delete(x.index, k)
		}
	}
	wk := r.watch()
	if x.uses[wk]--; x.uses[wk] > 0 {
		return
	}
	delete(x.uses, wk)
	if w := x.watches[wk]; w != nil {
		w.remove()
		delete(x.watches, wk)
	}
}

// referencedLocked reports whether instance key still has a reference
// indexed under k.
func (x *externals) referencedLocked(key types.NamespacedName, k extKey) bool {
	for i := range x.refs[key] {
		if x.refs[key][i].key() == k {
			return true
		}
	}
	return false
}

// readers returns the instances that must be requeued for an object of
// kind gvk in the named cluster: before (if it was known) and after (if it
// is still there) an event. Each is a reference's view of the object.
func (x *externals) readers(cluster string, gvk schema.GroupVersionKind, before, after *objectView) []types.NamespacedName {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []types.NamespacedName
	seen := map[types.NamespacedName]bool{}
	consider := func(k extKey) {
		for key := range x.index[k] {
			if seen[key] {
				continue
			}
			for i := range x.refs[key] {
				r := &x.refs[key][i]
				if r.key() == k && r.changedBy(before, after) {
					seen[key] = true
					out = append(out, key)
					break
				}
			}
		}
	}
	for _, v := range []*objectView{before, after} {
		if v == nil {
			continue
		}
		consider(extKey{cluster: cluster, gvk: gvk, namespace: v.namespace, name: v.name})
		consider(extKey{cluster: cluster, gvk: gvk, namespace: v.namespace, selector: true})
	}
	return out
}

// objectView is an object as an event shows it.
type objectView struct {
	namespace, name, rv string
	labels              map[string]string
}

// changedBy reports whether an event that shows an object as before (nil:
// not known) and then after (nil: gone) changes what r read.
func (r *extRef) changedBy(before, after *objectView) bool {
	v := after
	if v == nil {
		v = before
	}
	obj := types.NamespacedName{Namespace: v.namespace, Name: v.name}
	switch {
	case after != nil && r.matches(after.namespace, after.name, after.labels):
		return r.stale(obj, true, after.rv)
	case before != nil && r.matches(before.namespace, before.name, before.labels):
		return r.stale(obj, false, "") // gone, or no longer selected
	}
	_, read := r.seen[obj] // selected when read, and the informer missed its change
	return read
}
