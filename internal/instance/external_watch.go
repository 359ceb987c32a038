package instance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	toolscache "k8s.io/client-go/tools/cache"
)

// This file watches external references no wider than they name, in the
// cluster they are read in: a reference by name gets an informer that
// lists and watches that one object (a field selector on its name, in its
// namespace), a reference by selector one that lists and watches only the
// matching objects. A reference to one Secret so never puts the cluster's
// other Secrets in memory, and a reference is read from its informer, not
// asked of its cluster at every evaluation. An informer runs while some
// instance's last evaluation referenced it, and stops when none does
// (externalRefs.set) or when its cluster's place stops (the cluster left,
// was engaged anew, or was forgotten: dropCluster).

var _ toolscache.ResourceEventHandler = externalHandler{}

// scopeKey names one scoped informer.
type scopeKey struct {
	cluster         string
	gvk             schema.GroupVersionKind
	namespace, name string
	selector        string
}

func (r resolvedRef) scope() scopeKey {
	k := scopeKey{cluster: r.cluster, gvk: r.gvk, namespace: r.namespace, name: r.name}
	if r.selector != nil {
		k.name, k.selector = "", r.selector.String()
	}
	return k
}

// scoped is a running scoped informer.
type scoped struct {
	store  toolscache.Store
	cancel context.CancelFunc
	users  map[types.NamespacedName]struct{} // instances whose references use it
}

// ensure starts the informer for ref's scope in p's cluster if it is not
// running, and waits until it has synced.
func (x *externalRefs) ensure(p *place, ref resolvedRef) error {
	key := ref.scope()
	return p.watches.start(key, func() error { return x.startScoped(p, key) })
}

func (x *externalRefs) startScoped(p *place, key scopeKey) error {
	mapping, err := p.c.GetRESTMapper().RESTMapping(key.gvk.GroupKind(), key.gvk.Version)
	if err != nil {
		return fmt.Errorf("kind %s is not served%s: %w", key.gvk, p.where(), err)
	}
	dyn, err := dynamic.NewForConfigAndClient(p.c.GetConfig(), p.c.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("watching %s%s: %w", key.gvk, p.where(), err)
	}
	p.watches.health(key.gvk)
	inf := p.watches.informer(key.gvk, scopedListWatch(dyn.Resource(mapping.Resource).Namespace(key.namespace), key))
	if _, err := inf.AddEventHandler(externalHandler{e: x.e, cluster: key.cluster, gvk: key.gvk}); err != nil {
		return fmt.Errorf("watching %s%s: %w", key.gvk, p.where(), err)
	}
	ctx, cancel := context.WithCancel(p.ctx)
	go inf.RunWithContext(ctx)
	select {
	case <-inf.HasSyncedChecker().Done():
	case <-ctx.Done():
		cancel()
		return fmt.Errorf("watching %s%s: %w", key.gvk, p.where(), p.ctx.Err())
	}
	x.mu.Lock()
	x.scoped[key] = &scoped{store: inf.GetStore(), cancel: cancel, users: map[types.NamespacedName]struct{}{}}
	x.mu.Unlock()
	return nil
}

// scopedListWatch lists and watches, through res, what key names.
func scopedListWatch(res dynamic.ResourceInterface, key scopeKey) *toolscache.ListWatch {
	scope := func(o *metav1.ListOptions) {
		if key.name != "" {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", key.name).String()
		}
		o.LabelSelector = key.selector
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			scope(&o)
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (apiwatch.Interface, error) {
			scope(&o)
			return res.Watch(ctx, o)
		},
	}
}

// errNotWatched: the scope stopped after it was ensured (its last user
// left meanwhile).
var errNotWatched = errors.New("external reference not watched")

// items returns the objects ref's informer holds, copied.
func (x *externalRefs) items(ref resolvedRef) ([]any, error) {
	x.mu.Lock()
	s := x.scoped[ref.scope()]
	x.mu.Unlock()
	if s == nil {
		return nil, errNotWatched
	}
	var matched []*unstructured.Unstructured
	for _, obj := range s.store.List() {
		if u, ok := obj.(*unstructured.Unstructured); ok && ref.matches(ref.gvk, u) {
			matched = append(matched, u)
		}
	}
	// In the API server's LIST order, (namespace, name), as kro reads them:
	// a cache lists in no order, and a list a template renders must not
	// change from one reconcile to the next.
	slices.SortFunc(matched, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	out := make([]any, 0, len(matched))
	for _, u := range matched {
		out = append(out, u.DeepCopy().Object)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// useScopesLocked records that instance key's references changed from old
// to refs: it becomes a user of refs' scopes and stops being one of the
// others; a scope that loses its last user is stopped. (A scope started by
// an evaluation whose references are not recorded yet has no user and runs
// until one leaves it.)
func (x *externalRefs) useScopesLocked(key types.NamespacedName, old, refs []resolvedRef) {
	keep := map[scopeKey]bool{}
	for _, r := range refs {
		keep[r.scope()] = true
		if s := x.scoped[r.scope()]; s != nil {
			s.users[key] = struct{}{}
		}
	}
	for _, r := range old {
		sk := r.scope()
		s := x.scoped[sk]
		if s == nil || keep[sk] {
			continue
		}
		delete(s.users, key)
		if len(s.users) == 0 {
			s.cancel()
			delete(x.scoped, sk)
			if p := x.e.places.named(sk.cluster); p != nil {
				p.watches.drop(sk)
			}
		}
	}
}

// dropCluster stops every scoped informer in the cluster called name (its
// place stopped: the cluster left, was engaged anew, or is forgotten) and
// returns the instances whose references read there: their next
// evaluation watches the cluster's new engagement, or finds it gone.
func (x *externalRefs) dropCluster(name string) []types.NamespacedName {
	x.mu.Lock()
	defer x.mu.Unlock()
	for sk, s := range x.scoped {
		if sk.cluster == name {
			s.cancel()
			delete(x.scoped, sk)
		}
	}
	var out []types.NamespacedName
	for key, refs := range x.refs {
		if slices.ContainsFunc(refs, func(r resolvedRef) bool { return r.cluster == name }) {
			out = append(out, key)
		}
	}
	return out
}

// read returns the referenced objects from the reference's scoped
// informer in p's cluster: nil when a reference by name finds nothing.
func (x *externalRefs) read(p *place, ref resolvedRef) ([]any, error) {
	items, err := x.items(ref)
	if errors.Is(err, errNotWatched) {
		if err := x.ensure(p, ref); err != nil {
			return nil, err
		}
		items, err = x.items(ref)
	}
	if err != nil {
		return nil, err
	}
	if ref.selector == nil && len(items) == 0 {
		return nil, nil
	}
	if items == nil {
		items = []any{}
	}
	return items, nil
}

// externalHandler requeues the instances whose external references match
// the object that changed.
type externalHandler struct {
	e       *Engine
	cluster string
	gvk     schema.GroupVersionKind
}

func (h externalHandler) OnAdd(obj any, _ bool)  { h.changed(obj) }
func (h externalHandler) OnUpdate(_, newObj any) { h.changed(newObj) }
func (h externalHandler) OnDelete(obj any)       { h.changed(tombstone(obj)) }
func (h externalHandler) changed(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	for _, key := range h.e.refs.referrers(h.cluster, h.gvk, u) {
		h.e.enqueue(key)
	}
}
