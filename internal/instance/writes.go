package instance

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownWriteTTL bounds how long our own copy of an instance is preferred to
// the cache's, in case the cache never delivers that exact version (a
// relist can skip it).
const ownWriteTTL = 30 * time.Second

// Writes remembers an engine's writes of each instance (its finalizer and
// bookkeeping annotations, its status) as the API server answered them,
// until the driver's instance watch delivers those versions. It serves two
// purposes:
//
//   - the watch events of our own writes need not requeue the instance
//     (Echo, Hold): the reconcile that wrote already acted on everything
//     those writes hold, and a path that must come back asks for it rather
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
type Writes struct {
	mu     sync.Mutex
	m      map[types.NamespacedName]ownWrite
	flight map[types.NamespacedName]*inFlight
}

// inFlight is the writes of one instance under way, and the versions the
// watch delivered meanwhile, with how to requeue it.
type inFlight struct {
	n       int
	early   []string
	requeue func()
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

// NewWrites returns an empty memory of writes. Its maps are made on the
// first write and dropped once empty again: an engine per cluster and
// graph, most of them with an instance or two, holds nothing here between
// writes (a Go map keeps its storage after its last delete).
func NewWrites() *Writes { return &Writes{} }

// forgetLocked drops what is remembered under key.
func (w *Writes) forgetLocked(key types.NamespacedName) {
	delete(w.m, key)
	if len(w.m) == 0 {
		w.m = nil
	}
}

// rememberLocked keeps ow under key.
func (w *Writes) rememberLocked(key types.NamespacedName, ow ownWrite) {
	if w.m == nil {
		w.m = map[types.NamespacedName]ownWrite{}
	}
	w.m[key] = ow
}

// maxEarly bounds the events held for one instance while its write is in
// flight (a tenant may write its instance as fast as it likes meanwhile);
// past it, the instance is simply requeued when the write ends.
const maxEarly = 16

// writing runs write, which writes inst (the instance under key) and leaves
// the API server's answer in it, between begin and end, whatever becomes of
// it: a write that fails or panics ends as failed, so no instance's events
// are held for ever.
func (w *Writes) writing(key types.NamespacedName, inst *unstructured.Unstructured, write func() error) error {
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
func (w *Writes) begin(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.flight[key]
	if f == nil {
		if w.flight == nil {
			w.flight = map[types.NamespacedName]*inFlight{}
		}
		f = &inFlight{}
		w.flight[key] = f
	}
	f.n++
}

// end says the write begin announced is over: written is the API server's
// answer, nil when the write failed. Once no write of key is in flight,
// the events held meanwhile that were not ours requeue the instance.
func (w *Writes) end(key types.NamespacedName, written *unstructured.Unstructured) {
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
	if len(w.flight) == 0 {
		w.flight = nil
	}
	if len(f.early) > 0 && f.requeue != nil {
		w.forgetLocked(key) // the cache may hold a newer version than ours
		f.requeue()
	}
}

// Hold keeps u, delivered by the instance watch, until the write of its
// instance now in flight ends, and calls requeue then if it was not that
// write (a nil requeue: the caller requeues by its own rules); it reports
// false when no write is in flight.
func (w *Writes) Hold(u client.Object, requeue func()) bool {
	key := keyOf(u)
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
	f.requeue = requeue
	return true
}

// wrote records u as one of our writes returned it.
func (w *Writes) wrote(u *unstructured.Unstructured) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wroteLocked(u)
}

func (w *Writes) wroteLocked(u *unstructured.Unstructured) {
	if u.GetResourceVersion() == "" {
		return
	}
	key := keyOf(u)
	ow := w.m[key]
	if ow.obj == nil || ow.obj.GetUID() != u.GetUID() {
		ow.versions = nil
	}
	ow.versions = append(ow.versions, u.GetResourceVersion())
	if len(ow.versions) > maxOwnVersions {
		ow.versions = ow.versions[len(ow.versions)-maxOwnVersions:]
	}
	ow.obj, ow.at = u.DeepCopy(), time.Now()
	w.rememberLocked(key, ow)
}

// Echo reports whether u, delivered by the instance watch, is one of our
// writes coming back. The versions up to it are delivered; our copy is
// kept until the latest is.
func (w *Writes) Echo(u client.Object) bool {
	key := keyOf(u)
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
		w.forgetLocked(key)
		return true
	}
	w.m[key] = ow
	return true
}

// Len is how many instances have a write remembered: once every write
// came back through the watch, none.
func (w *Writes) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

// Forget drops what is remembered under key.
func (w *Writes) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forgetLocked(key)
}

// Fresher returns our own latest copy of the instance when the cache has
// not yet delivered it, else cached.
func (w *Writes) Fresher(cached *unstructured.Unstructured) *unstructured.Unstructured {
	key := keyOf(cached)
	w.mu.Lock()
	defer w.mu.Unlock()
	ow, ok := w.m[key]
	if !ok {
		return cached
	}
	if ow.obj.GetUID() != cached.GetUID() || ow.obj.GetResourceVersion() == cached.GetResourceVersion() ||
		time.Since(ow.at) > ownWriteTTL {
		w.forgetLocked(key)
		return cached
	}
	return ow.obj.DeepCopy()
}

// Ours returns our own last write of the instance under key while it is
// remembered (the cache has not delivered it yet), else nil.
func (w *Writes) Ours(key types.NamespacedName) *unstructured.Unstructured {
	w.mu.Lock()
	defer w.mu.Unlock()
	ow, ok := w.m[key]
	if !ok || time.Since(ow.at) > ownWriteTTL {
		return nil
	}
	return ow.obj.DeepCopy()
}
