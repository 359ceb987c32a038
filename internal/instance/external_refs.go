package instance

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// externalRefs is what an engine knows of external references: each
// instance's references as its last evaluation resolved them, in whatever
// cluster, indexed so that a change to a referenced object requeues
// exactly the instances that refer to it, and the scoped informers that
// watch them, each no wider than the references it serves
// (external_watch.go). An informer runs while some instance's last
// evaluation referenced it, and stops when its cluster's place does.
//
// Its memory is bounded by the instances that exist: per instance, one
// entry per externalRef node its graph has (the RGD's size, not the
// tenant's); an instance's entries go when it is gone.
type externalRefs struct {
	e *Engine // starts the scoped informers in its places

	mu     sync.Mutex
	refs   map[types.NamespacedName][]resolvedRef
	index  map[refKey]map[types.NamespacedName]struct{} // see referrers
	scoped map[scopeKey]*scoped
}

func newExternalRefs(e *Engine) *externalRefs {
	return &externalRefs{
		e:      e,
		refs:   map[types.NamespacedName][]resolvedRef{},
		index:  map[refKey]map[types.NamespacedName]struct{}{},
		scoped: map[scopeKey]*scoped{},
	}
}

// resolvedRef is an external reference as last evaluated for an instance.
type resolvedRef struct {
	cluster   string
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

// refKey indexes references: by cluster, kind, namespace and name for a
// reference by name; by cluster and kind alone (empty namespace and name,
// selector set) for one by selector, which must be matched against each
// object.
type refKey struct {
	cluster         string
	gvk             schema.GroupVersionKind
	namespace, name string
	selector        bool
}

func (r resolvedRef) indexKey() refKey {
	if r.selector != nil {
		return refKey{cluster: r.cluster, gvk: r.gvk, selector: true}
	}
	return refKey{cluster: r.cluster, gvk: r.gvk, namespace: r.namespace, name: r.name}
}

// set records the references of instance key's last evaluation: it uses
// their scoped informers from now on, and no longer the others.
func (x *externalRefs) set(key types.NamespacedName, refs []resolvedRef) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.useScopesLocked(key, x.refs[key], refs)
	x.unindexLocked(key)
	if len(refs) == 0 {
		return
	}
	x.refs[key] = refs
	for _, r := range refs {
		set := x.index[r.indexKey()]
		if set == nil {
			set = map[types.NamespacedName]struct{}{}
			x.index[r.indexKey()] = set
		}
		set[key] = struct{}{}
	}
}

// forget drops instance key's references, as if it had none.
func (x *externalRefs) forget(key types.NamespacedName) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.useScopesLocked(key, x.refs[key], nil)
	x.unindexLocked(key)
}

// unindexLocked forgets key's references.
func (x *externalRefs) unindexLocked(key types.NamespacedName) {
	for _, r := range x.refs[key] {
		ik := r.indexKey()
		delete(x.index[ik], key)
		if len(x.index[ik]) == 0 {
			delete(x.index, ik)
		}
	}
	delete(x.refs, key)
}

// referrers returns the instances whose references match u, of kind gvk in
// the cluster called cluster: a lookup for references by name, a match of
// each selector reference of u's kind.
func (x *externalRefs) referrers(cluster string, gvk schema.GroupVersionKind, u *unstructured.Unstructured) []types.NamespacedName {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []types.NamespacedName
	for key := range x.index[refKey{cluster: cluster, gvk: gvk, namespace: u.GetNamespace(), name: u.GetName()}] {
		out = append(out, key)
	}
	for key := range x.index[refKey{cluster: cluster, gvk: gvk, selector: true}] {
		for _, r := range x.refs[key] {
			if r.selector != nil && r.cluster == cluster && r.matches(gvk, u) {
				out = append(out, key)
				break
			}
		}
	}
	return out
}

// kinds returns the kinds instance key's references name.
func (x *externalRefs) kinds(key types.NamespacedName) []schema.GroupVersionKind {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]schema.GroupVersionKind, 0, len(x.refs[key]))
	for _, r := range x.refs[key] {
		out = append(out, r.gvk)
	}
	return out
}
