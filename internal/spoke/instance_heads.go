package spoke

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// An instance kind has one watch, whose events arrive in order: an
// instance holding a list of 1e5 integers takes the hub 43 ms to decode
// (and the API server time to encode for that watch), so a tenant who
// writes many such instances held back every other instance of the kind,
// in every namespace: by up to 3.2 s in the hostile corpus (issue 23),
// while the API server showed the change at once to a watch of that one
// instance. So the runtime also watches such a kind through a
// metadata-only informer, whose events carry only the metadata whatever
// the body's size, and its events start reconciles. A reconcile that finds
// the full informer behind what the metadata showed gives its worker back
// and is started again when the full informer delivers the instance, or
// after Options.InstanceCatchUp, when it reads the instance from the API
// server itself. A large instance then costs its own reconcile a read; a
// small one on a quiet cluster costs nothing more, since the full informer
// is not behind. The full informer still starts reconciles of changes the
// metadata informer did not show (a metadata watch that fails), so it
// alone keeps everything working, as before.
//
// That second watch is not free: it doubles the watch events the API
// server encodes and the hub decodes for the kind, which cost the
// reference benchmark about 5% (BenchmarkWebApp500), while small instances
// cannot hold the full informer back by much. So a kind is watched by the
// full informer alone until it delivers an instance whose estimated size
// passes Options.InstanceHeadsAbove (the walk stops there: it costs a small
// instance a walk over its fields, and a large one no more than the
// threshold); the metadata watch of the kind starts then, on that cluster,
// and runs until the member ends. Until it has shown anything, heads is
// empty and nothing waits for it: the runtime behaves as with the full
// informer alone. Its initial list starts a reconcile of every instance
// whose version the full informer has not delivered yet, since the full
// informer's handler leaves an instance to the metadata watch once that
// watch has shown its version.

var _ toolscache.ResourceEventHandler = instanceHeadHandler{}

// instanceHeads is what the metadata-only instance watch last showed of
// each instance (its "head"), and since when a reconcile of each instance
// has been waiting for the full informer to catch up with it.
type instanceHeads struct {
	// watched is set once the metadata-only watch is asked for.
	watched atomic.Bool

	mu      sync.Mutex
	heads   map[types.NamespacedName]*metav1.PartialObjectMetadata
	pending map[types.NamespacedName]time.Time
}

func newInstanceHeads() *instanceHeads {
	return &instanceHeads{
		heads:   map[types.NamespacedName]*metav1.PartialObjectMetadata{},
		pending: map[types.NamespacedName]time.Time{},
	}
}

// saw notes what the metadata watch delivered for key.
func (x *instanceHeads) saw(meta *metav1.PartialObjectMetadata) {
	key := types.NamespacedName{Namespace: meta.Namespace, Name: meta.Name}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.heads[key] = meta
}

// gone forgets key: the metadata watch saw it deleted.
func (x *instanceHeads) gone(key types.NamespacedName) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.heads, key)
	delete(x.pending, key)
}

// head is what the metadata watch last showed of key, nil if nothing.
func (x *instanceHeads) head(key types.NamespacedName) *metav1.PartialObjectMetadata {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.heads[key]
}

// shown reports whether the metadata watch showed u's very version, so
// the reconcile it started saw u (or newer).
func (x *instanceHeads) shown(u *unstructured.Unstructured) bool {
	h := x.head(keyOf(u))
	return h != nil && h.UID == u.GetUID() && h.ResourceVersion == u.GetResourceVersion()
}

// showing returns u if the metadata watch shows the instance u is a copy
// of (same UID), else nil: a copy of an instance since deleted is not used.
func (x *instanceHeads) showing(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u == nil {
		return nil
	}
	if h := x.head(keyOf(u)); h == nil || h.UID != u.GetUID() {
		return nil
	}
	return u
}

// arrived reports whether a reconcile of key waits for the full informer
// to deliver it: its handler then starts that reconcile again.
func (x *instanceHeads) arrived(key types.NamespacedName) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.pending[key]
	return ok
}

// await notes that a reconcile of key found the full informer behind, and
// returns since when one has.
func (x *instanceHeads) await(key types.NamespacedName) time.Time {
	x.mu.Lock()
	defer x.mu.Unlock()
	since, ok := x.pending[key]
	if !ok {
		since = time.Now()
		x.pending[key] = since
	}
	return since
}

// settle ends key's wait: the reconcile has what it needs.
func (x *instanceHeads) settle(key types.NamespacedName) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.pending, key)
}

// behind reports whether u, what the full informer (or our own write)
// holds for a key, is older than head in something a reconcile reads:
// a missing or replaced instance, a newer generation, a deletion, labels
// or annotations (metaChanged). Status changes do not count.
func behind(u *unstructured.Unstructured, head *metav1.PartialObjectMetadata) bool {
	if head == nil {
		return false
	}
	if u == nil {
		return true
	}
	if u.GetResourceVersion() == head.ResourceVersion {
		return false
	}
	if u.GetUID() == head.UID && u.GetGeneration() > head.Generation {
		return false // ours is the newer one
	}
	return metaChanged(u, head)
}

// instanceHeadHandler is the metadata-only instance watch's handler: it
// starts reconciles as instanceHandler does, without waiting for the body.
type instanceHeadHandler struct{ m *member }

// OnAdd starts a reconcile of a new instance. Of the informer's initial
// objects, it starts those of the instances whose version the full
// informer, started first, has not delivered: the full informer's handler
// leaves those to this watch once it has shown them.
func (h instanceHeadHandler) OnAdd(obj any, initial bool) {
	meta, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	h.m.heads.saw(meta)
	key := types.NamespacedName{Namespace: meta.Namespace, Name: meta.Name}
	if !initial || !h.m.engine.Instances().Delivered(key, meta.UID, meta.ResourceVersion) {
		h.m.enqueue(key)
	}
}

func (h instanceHeadHandler) OnUpdate(oldObj, newObj any) {
	o, ok1 := oldObj.(*metav1.PartialObjectMetadata)
	n, ok2 := newObj.(*metav1.PartialObjectMetadata)
	if !ok1 || !ok2 {
		return
	}
	h.m.heads.saw(n)
	if metaChanged(o, n) {
		h.m.enqueue(types.NamespacedName{Namespace: n.Namespace, Name: n.Name})
	}
}

func (h instanceHeadHandler) OnDelete(obj any) {
	if meta, ok := tombstone(obj).(*metav1.PartialObjectMetadata); ok {
		h.m.heads.gone(types.NamespacedName{Namespace: meta.Namespace, Name: meta.Name})
	}
}

// catchUp returns the instance under key as fresh as the metadata watch
// showed it: cached (from the full informer, or our own newer write) if
// it is not behind. Else it asks, without holding the worker, to come
// back after what is left of Options.InstanceCatchUp (the full
// informer's delivery of key starts the reconcile sooner: handlers.go);
// once that has passed, it reads the instance from the API server. A nil
// cached means the full informer does not hold key; the result is then
// nil if the metadata watch does not either.
func (r reconciler) catchUp(key types.NamespacedName, cached *unstructured.Unstructured) (*unstructured.Unstructured, time.Duration, error) {
	m := r.m
	if !behind(cached, m.heads.head(key)) {
		m.heads.settle(key)
		return cached, 0, nil
	}
	if left := m.c.opts.InstanceCatchUp - time.Since(m.heads.await(key)); left > 0 {
		return nil, left, nil
	}
	m.heads.settle(key)
	u, err := r.live(key)
	return u, 0, err
}

// live reads the instance from the API server. The copy is not kept: an
// instance read this way may be large, and a reconcile that writes its
// status keeps what the write returned (instanceMemory).
func (r reconciler) live(key types.NamespacedName) (*unstructured.Unstructured, error) {
	m := r.m
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.g.Instance.GVK)
	ctx, cancel := m.callCtx()
	defer cancel()
	if err := m.cl.GetAPIReader().Get(ctx, key, u); err != nil {
		return nil, fmt.Errorf("reading instance %s: %w", key, err)
	}
	return u, nil
}

// weigh starts the metadata-only instance watch in the background once
// the instance watch delivers an instance at least
// Options.InstanceHeadsAbove large; when InstanceHeadsAbove is negative,
// member.open starts it instead. A start that fails is tried again by the
// next large instance.
func (w *watches) weigh(u *unstructured.Unstructured) {
	m := w.m
	opts := &m.c.opts
	if opts.InstanceCatchUp < 0 || opts.InstanceHeadsAbove < 0 || m.heads.watched.Load() {
		return
	}
	if !atLeast(u.Object, opts.InstanceHeadsAbove) || !m.heads.watched.CompareAndSwap(false, true) {
		return
	}
	m.log.V(1).Info("a large instance starts the metadata-only instance watch", "instance", keyOf(u).String())
	go func() {
		if err := w.watchHeads(); err != nil && m.ctx.Err() == nil {
			m.log.V(1).Info("metadata-only instance watch not started", "reason", err.Error())
			m.heads.watched.Store(false)
		}
	}()
}

// watchHeads starts the metadata-only instance watch, until the member
// ends.
func (w *watches) watchHeads() error {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(w.m.g.Instance.GVK)
	return w.shared(meta, instanceHeadHandler{m: w.m})
}
