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
// The watch may also deliver our write before its answer reaches us: an
// event that arrives while a write of that instance is in flight (begin,
// end) is held until the write ends, and requeues the instance then only
// if it was not that write.
//
// Any other change, even one made between our read and our write, has a
// resourceVersion of its own, and its event requeues the instance.
type ownWrites struct {
	mu     sync.Mutex
	m      map[types.NamespacedName]ownWrite
	flight map[types.NamespacedName]*inFlight
}

// inFlight is the writes of one instance under way, and the versions the
// watch delivered meanwhile, with the queue to requeue it on.
type inFlight struct {
	n     int
	early []string
	q     queue
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
	return &ownWrites{m: map[types.NamespacedName]ownWrite{}, flight: map[types.NamespacedName]*inFlight{}}
}

// maxEarly bounds the events held for one instance while its write is in
// flight (a tenant may write its instance as fast as it likes meanwhile);
// past it, the instance is simply requeued when the write ends.
const maxEarly = 16

// writing runs write, which writes inst (the instance under key) and leaves
// the API server's answer in it, between begin and end, whatever becomes of
// it: a write that fails or panics ends as failed, so no instance's events
// are held for ever.
func (w *ownWrites) writing(key types.NamespacedName, inst *unstructured.Unstructured, write func() error) error {
	w.begin(key)
	done := false
	defer func() {
		if done {
			w.end(key, inst)
		} else {
			w.end(key, nil)
		}
	}()
	if err := write(); err != nil {
		return err
	}
	done = true
	return nil
}

// begin says a write of the instance key is about to be sent.
func (w *ownWrites) begin(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.flight[key]
	if f == nil {
		f = &inFlight{}
		w.flight[key] = f
	}
	f.n++
}

// end says the write begin announced is over: written is the API server's
// answer, nil when the write failed. Once no write of key is in flight,
// the events held meanwhile that were not ours requeue the instance.
func (w *ownWrites) end(key types.NamespacedName, written *unstructured.Unstructured) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.flight[key]
	if f == nil {
		if written != nil {
			w.wroteLocked(written)
		}
		return
	}
	delivered := false
	if written != nil {
		if i := slices.Index(f.early, written.GetResourceVersion()); i >= 0 && written.GetResourceVersion() != "" {
			f.early = slices.Delete(f.early, i, i+1)
			delivered = true
		}
		if !delivered {
			w.wroteLocked(written)
		}
	}
	if f.n--; f.n > 0 {
		return
	}
	delete(w.flight, key)
	if len(f.early) > 0 && f.q != nil {
		delete(w.m, key) // the cache may hold a newer version than ours
		f.q.Add(reconcile.Request{NamespacedName: key})
	}
}

// hold keeps u, delivered by the instance watch, until the write of its
// instance now in flight ends; it reports false when none is.
func (w *ownWrites) hold(u client.Object, q queue) bool {
	key := keyOf(u.GetNamespace(), u.GetName())
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.flight[key]
	if f == nil {
		return false
	}
	if len(f.early) < maxEarly {
		f.early = append(f.early, u.GetResourceVersion())
	} else {
		f.early[maxEarly-1] = "" // not ours whatever the write answers: requeue
	}
	f.q = q
	return true
}

// wrote records u as one of our writes returned it.
func (w *ownWrites) wrote(u *unstructured.Unstructured) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wroteLocked(u)
}

func (w *ownWrites) wroteLocked(u *unstructured.Unstructured) {
	if u.GetResourceVersion() == "" {
		return
	}
	key := keyOf(u.GetNamespace(), u.GetName())
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
type instanceHandler struct {
	writes *ownWrites
	// changed is told of every event (view.go).
	changed func()
}

var _ handler.EventHandler = instanceHandler{}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func request(o client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: keyOf(o.GetNamespace(), o.GetName())}
}

func (h instanceHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	h.changed()
	h.writes.forget(keyOf(e.Object.GetNamespace(), e.Object.GetName()))
	q.Add(request(e.Object))
}

func (h instanceHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	h.changed()
	if h.writes.echo(e.ObjectNew) || h.writes.hold(e.ObjectNew, q) {
		return
	}
	h.writes.forget(keyOf(e.ObjectNew.GetNamespace(), e.ObjectNew.GetName()))
	q.Add(request(e.ObjectNew))
}

func (h instanceHandler) Delete(_ context.Context, e event.DeleteEvent, q queue) {
	h.changed()
	h.writes.forget(keyOf(e.Object.GetNamespace(), e.Object.GetName()))
	q.Add(request(e.Object))
}

func (h instanceHandler) Generic(_ context.Context, e event.GenericEvent, q queue) {
	q.Add(request(e.Object))
}
