package spoke

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

// This file watches external references no wider than they name: a
// reference by name gets an informer that lists and watches that one object
// (a field selector on its name, in its namespace), a reference by selector
// one that lists and watches only the matching objects. A reference to one
// Secret so never puts the cluster's other Secrets in memory. An informer
// runs while some instance's last evaluation referenced it, and stops when
// none does (externalRefs.set).

// scopeKey names one scoped informer.
type scopeKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
	selector        string
}

func (r resolvedRef) scope() scopeKey {
	k := scopeKey{gvk: r.gvk, namespace: r.namespace, name: r.name}
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

// ensure starts the informer for ref's scope if it is not running, and
// waits until it has synced.
func (x *externalRefs) ensure(ref resolvedRef) error {
	key := ref.scope()
	return x.m.watches.start(key, func() error { return x.startScoped(key) })
}

func (x *externalRefs) startScoped(key scopeKey) error {
	m := x.m
	mapping, err := m.cl.GetRESTMapper().RESTMapping(key.gvk.GroupKind(), key.gvk.Version)
	if err != nil {
		return fmt.Errorf("kind %s is not served: %w", key.gvk, err)
	}
	dyn, err := dynamic.NewForConfigAndClient(m.cl.GetConfig(), m.cl.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("watching %s: %w", key.gvk, err)
	}
	m.watches.health(key.gvk)
	inf := m.watches.informer(key.gvk, scopedListWatch(dyn.Resource(mapping.Resource).Namespace(key.namespace), key))
	if _, err := inf.AddEventHandler(externalHandler{m: m, gvk: key.gvk}); err != nil {
		return fmt.Errorf("watching %s: %w", key.gvk, err)
	}
	ctx, cancel := context.WithCancel(m.ctx)
	go inf.RunWithContext(ctx)
	select {
	case <-inf.HasSyncedChecker().Done():
	case <-ctx.Done():
		cancel()
		return fmt.Errorf("watching %s: %w", key.gvk, m.ctx.Err())
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
			x.m.watches.drop(sk)
		}
	}
}

// read returns the referenced objects from the reference's scoped
// informer: nil when a reference by name finds nothing.
func (x *externalRefs) read(ref resolvedRef) ([]any, error) {
	items, err := x.items(ref)
	if errors.Is(err, errNotWatched) {
		if err := x.ensure(ref); err != nil {
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
