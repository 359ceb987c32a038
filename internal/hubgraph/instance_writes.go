package hubgraph

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ownWriteTTL bounds how long our own copy of an instance is preferred to
// the cache's, in case the cache never delivers that exact version (a
// relist can skip it).
const ownWriteTTL = 30 * time.Second

// ownWrites remembers the hub's writes of each instance (its finalizer and
// clusters, its status) as the API server answered them, until the
// instance watch delivers those versions. It serves two purposes:
//
//   - the watch events of our own writes do not requeue the instance: the
//     reconcile that wrote already acted on everything those writes hold,
//     and a path that must come back asks for it (RequeueAfter) rather
//     than relying on the echo of its own write;
//   - a reconcile that starts before the cache caught up with our latest
//     write works from our copy, never from an older one (which would
//     write the same status again or meet a conflict on the finalizer).
//
// One reconcile may write twice (the finalizer, then the status), and a
// slow watch may deliver the first write after the second was made, so
// every version not yet delivered is remembered, not only the latest (at
// most maxOwnVersions of them).
//
// Any other change, even one made between our read and our write, has a
// resourceVersion of its own, and its event requeues the instance.
type ownWrites struct {
	mu sync.Mutex
	m  map[types.NamespacedName]ownWrite
}

// maxOwnVersions bounds the versions remembered per instance; a reconcile
// writes at most two, so more than a few pending means the watch is far
// behind, and the oldest are then treated as foreign (one extra reconcile).
const maxOwnVersions = 4

type ownWrite struct {
	obj      *unstructured.Unstructured // the latest write
	versions []string                   // every write not yet delivered, oldest first
	at       time.Time
}

func newOwnWrites() *ownWrites {
	return &ownWrites{m: map[types.NamespacedName]ownWrite{}}
}

// wrote records u as one of our writes returned it.
func (w *ownWrites) wrote(u *unstructured.Unstructured) {
	if u.GetResourceVersion() == "" {
		return
	}
	key := keyOf(u.GetNamespace(), u.GetName())
	w.mu.Lock()
	defer w.mu.Unlock()
	ow := w.m[key]
	if ow.obj == nil || ow.obj.GetUID() != u.GetUID() {
		ow.versions = nil
	}
	ow.versions = append(ow.versions, u.GetResourceVersion())
	if len(ow.versions) > maxOwnVersions {
		ow.versions = ow.versions[len(ow.versions)-maxOwnVersions:]
	}
	ow.obj, ow.at = u.DeepCopy(), time.Now()
	w.m[key] = ow
}

// echo reports whether u, delivered by the instance watch, is one of our
// writes coming back. The versions up to it are delivered; our copy is
// kept until the latest is.
func (w *ownWrites) echo(u client.Object) bool {
	key := keyOf(u.GetNamespace(), u.GetName())
	w.mu.Lock()
	defer w.mu.Unlock()
	ow, ok := w.m[key]
	if !ok || ow.obj.GetUID() != u.GetUID() {
		return false
	}
	i := slices.Index(ow.versions, u.GetResourceVersion())
	if i < 0 {
		return false
	}
	ow.versions = ow.versions[i+1:]
	if len(ow.versions) == 0 {
		delete(w.m, key)
		return true
	}
	w.m[key] = ow
	return true
}

// forget drops what is remembered under key.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// fresher returns our own latest copy of the instance when the cache has
// not yet delivered it, else cached.
func (w *ownWrites) fresher(cached *unstructured.Unstructured) *unstructured.Unstructured {
	key := keyOf(cached.GetNamespace(), cached.GetName())
	w.mu.Lock()
	defer w.mu.Unlock()
	ow, ok := w.m[key]
	if !ok {
		return cached
	}
	if ow.obj.GetUID() != cached.GetUID() || ow.obj.GetResourceVersion() == cached.GetResourceVersion() ||
		time.Since(ow.at) > ownWriteTTL {
		delete(w.m, key)
		return cached
	}
	return ow.obj.DeepCopy()
}

// instanceHandler enqueues an instance on every event of the instance
// watch except the echo of our own latest write. Any other event drops our
// copy: the cache may have skipped our version (a relist) and hold a newer
// one, which must not wait for ownWriteTTL to be seen; if the event's is
// older than ours instead, the worst is a write made again or a conflict,
// which requeues.
type instanceHandler struct{ writes *ownWrites }

var _ handler.EventHandler = instanceHandler{}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func request(o client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: keyOf(o.GetNamespace(), o.GetName())}
}

func (h instanceHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	h.writes.forget(keyOf(e.Object.GetNamespace(), e.Object.GetName()))
	q.Add(request(e.Object))
}

func (h instanceHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	if h.writes.echo(e.ObjectNew) {
		return
	}
	h.writes.forget(keyOf(e.ObjectNew.GetNamespace(), e.ObjectNew.GetName()))
	q.Add(request(e.ObjectNew))
}

func (h instanceHandler) Delete(_ context.Context, e event.DeleteEvent, q queue) {
	h.writes.forget(keyOf(e.Object.GetNamespace(), e.Object.GetName()))
	q.Add(request(e.Object))
}

func (h instanceHandler) Generic(_ context.Context, e event.GenericEvent, q queue) {
	q.Add(request(e.Object))
}
