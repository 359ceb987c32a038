package hubgraph

import (
	"context"
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

// ownWrites remembers the hub's latest write of each instance (its
// finalizer and clusters, its status) as the API server answered it, until
// the instance watch delivers that version. It serves two purposes:
//
//   - the watch event of our own write does not requeue the instance: the
//     reconcile that wrote already acted on everything that write holds,
//     and a path that must come back asks for it (RequeueAfter) rather
//     than relying on the echo of its own write;
//   - a reconcile that starts before the cache caught up with our write
//     works from our copy, never from an older one (which would write the
//     same status again or meet a conflict on the finalizer).
//
// Any other change, even one made between our read and our write, has a
// resourceVersion of its own, and its event requeues the instance.
type ownWrites struct {
	mu sync.Mutex
	m  map[types.NamespacedName]ownWrite
}

type ownWrite struct {
	obj *unstructured.Unstructured
	at  time.Time
}

func newOwnWrites() *ownWrites {
	return &ownWrites{m: map[types.NamespacedName]ownWrite{}}
}

// wrote records u as one of our writes returned it.
func (w *ownWrites) wrote(u *unstructured.Unstructured) {
	if u.GetResourceVersion() == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m[keyOf(u.GetNamespace(), u.GetName())] = ownWrite{obj: u.DeepCopy(), at: time.Now()}
}

// echo reports whether u, delivered by the instance watch, is our latest
// write coming back; the cache has it from then on.
func (w *ownWrites) echo(u client.Object) bool {
	key := keyOf(u.GetNamespace(), u.GetName())
	w.mu.Lock()
	defer w.mu.Unlock()
	ow, ok := w.m[key]
	if !ok || ow.obj.GetUID() != u.GetUID() || ow.obj.GetResourceVersion() != u.GetResourceVersion() {
		return false
	}
	delete(w.m, key)
	return true
}

// forget drops what is remembered under key.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// fresher returns our own copy of the instance when the cache has not yet
// delivered it, else cached.
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
