package instance

import (
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
)

// watches are an engine's watches in one cluster (a place): its share of
// the cluster's metadata informers of child kinds (through the cluster's
// shared handlers, fanout.go), the scoped informers of its external
// references (external_watch.go), and what the cluster's watch health
// says of the kinds they watch (cacheopts.ReportWatchErrors). Each watch
// is started once, in the background; every handler is removed when the
// place stops, while the cache's informers belong to the cluster and stop
// with it.
type watches struct {
	p *place

	mu      sync.Mutex
	started map[any]*watch // childWatch, scopeKey
}

var _ cacheopts.Listener = &watches{}

func newWatches(p *place) *watches {
	return &watches{p: p, started: map[any]*watch{}}
}

// childWatch names the metadata-only informer of one child kind that a
// place listens to.
type childWatch struct {
	gvk schema.GroupVersionKind
}

// watch is a watch being started or running; done closes when the start
// finished, err says how.
type watch struct {
	done chan struct{}
	err  error
}

// childKind makes sure the place listens to the child kind gvk, starting
// the informer in the cluster's cache if needed (which waits for it to
// sync).
func (w *watches) childKind(gvk schema.GroupVersionKind) error {
	return w.start(childWatch{gvk: gvk}, func() error {
		w.health(gvk)
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvk)
		leave, err := w.p.c.Listen(w.p.ctx, meta, childHandler{p: w.p, gvk: gvk})
		if err != nil {
			return err
		}
		w.p.addCleanup(leave)
		return nil
	})
}

// start runs start for key unless it ran already with success.
// Concurrent callers for one key share one start; a failed start is retried
// by the next caller. The start runs in a goroutine of its own, bound to the
// place, and callers wait for it at most Options.CallTimeout: a cluster
// slow to list a kind holds no worker longer than any other call, and the
// watch keeps starting meanwhile.
func (w *watches) start(key any, start func() error) error {
	w.mu.Lock()
	s, ok := w.started[key]
	if !ok {
		s = &watch{done: make(chan struct{})}
		w.started[key] = s
		go func() {
			s.err = start()
			if s.err != nil {
				w.mu.Lock()
				if w.started[key] == s {
					delete(w.started, key)
				}
				w.mu.Unlock()
			}
			close(s.done)
		}()
	}
	w.mu.Unlock()
	ctx, cancel := w.p.callCtx()
	defer cancel()
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return fmt.Errorf("%w%s: %w", ErrWatchStarting, w.p.where(), ctx.Err())
	}
}

// drop forgets key's start, so that the next caller starts it again: a
// scoped informer that stopped.
func (w *watches) drop(key any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.started, key)
}

// has reports whether the child kind gvk is watched (its informer lists
// from memory, without a call).
func (w *watches) has(gvk schema.GroupVersionKind) bool {
	w.mu.Lock()
	s, ok := w.started[childWatch{gvk: gvk}]
	w.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-s.done:
		return s.err == nil
	default:
		return false
	}
}

// ErrWatchStarting is wrapped by the error of a call that needed a watch
// whose initial list has not finished within Options.CallTimeout; the
// reconcile is retried.
var ErrWatchStarting = errors.New("watch still starting")

// health makes the place hear when gvk starts or stops failing on its
// cluster (WatchHealthChanged), until the place stops. A cluster built
// without cacheopts.ReportWatchErrors has nothing to tell.
func (w *watches) health(gvk schema.GroupVersionKind) {
	h := cacheopts.HealthOf(w.p.c.Cluster)
	if h == nil {
		return
	}
	h.Listen(w.p.c.name, w, gvk)
	w.p.addCleanup(func() { h.Forget(w) })
}

// informer is the informer of a kind the engine watches on its own
// (outside the cluster's cache) over lw: it reports its calls' results to
// the cluster's watch health, when the cluster has one.
func (w *watches) informer(gvk schema.GroupVersionKind, lw *toolscache.ListWatch) toolscache.SharedIndexInformer {
	through := cacheopts.HealthOf(w.p.c.Cluster).Observe(gvk, lw)
	return toolscache.NewSharedIndexInformer(through, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
}

// WatchHealthChanged forgets what was applied of kind gvk in the place's
// cluster and requeues the instances it was applied for, then tells the
// driver, whose instances each use the graph's kinds and whose status
// shows the change only once reconciled. It implements cacheopts.Listener.
//
// A watch that starts failing is blind, and one that stops failing may
// come back to a cluster that lost its state meanwhile (rebuilt at the same
// address, or its etcd emptied or restored from a backup), which its
// informer may never report: a watch resumed from a resourceVersion the new
// state has passed lists nothing again, so no child is seen deleted. Either
// way the apply memory no longer stands for the cluster, so every child of
// gvk there is applied again at its instance's next reconcile: while the
// cluster does not answer, those applies fail and the instances are not
// ACTIVE; once it does, what it lost is written back.
func (w *watches) WatchHealthChanged(gvk schema.GroupVersionKind) {
	if w.p.ctx.Err() != nil {
		return
	}
	for _, key := range w.p.memory.forgetKind(gvk) {
		w.p.e.enqueue(key)
	}
	if w.p.e.cfg.WatchHealthChanged != nil {
		w.p.e.cfg.WatchHealthChanged()
	}
}

// tombstone unwraps a deleted object whose final state the informer missed.
func tombstone(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}
