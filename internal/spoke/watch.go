package spoke

import (
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
)

// watches are a member's watches on its cluster: its handler on the
// instance informer, its share of the cluster's metadata informers of
// child kinds (through the cluster's shared handlers, shared_handlers.go),
// and what the cluster's watch health says of the kinds it uses
// (cacheopts.ReportWatchErrors). Each watch is started once, in the
// background; every handler is removed when the member ends, while the
// informers belong to the cluster and stop with it.
type watches struct {
	m   *member
	fan *fanouts // the cluster's shared handlers

	mu      sync.Mutex
	started map[any]*watch // watchKey, scopeKey
}

var _ cacheopts.Listener = &watches{}

func newWatches(m *member, fan *fanouts) *watches {
	return &watches{m: m, fan: fan, started: map[any]*watch{}}
}

// watchKey names the metadata-only informer of one child kind that a
// member listens to.
type watchKey struct {
	gvk schema.GroupVersionKind
}

// watch is a watch being started or running; done closes when the start
// finished, err says how.
type watch struct {
	done chan struct{}
	err  error
}

// childKind makes sure the member listens to the child kind gvk, starting
// the informer in the cluster's cache if needed (which waits for it to
// sync).
func (w *watches) childKind(gvk schema.GroupVersionKind) error {
	return w.start(watchKey{gvk: gvk}, func() error {
		w.health(gvk)
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvk)
		return w.shared(meta, childHandler{m: w.m, gvk: gvk})
	})
}

// start runs start for key unless it ran already with success.
// Concurrent callers for one key share one start; a failed start is retried
// by the next caller. The start runs in a goroutine of its own, bound to the
// member, and callers wait for it at most Options.CallTimeout: a cluster
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
	ctx, cancel := w.m.callCtx()
	defer cancel()
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errWatchStarting, ctx.Err())
	}
}

// drop forgets key's start, so that the next caller starts it again: a
// scoped informer that stopped.
func (w *watches) drop(key any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.started, key)
}

// errWatchStarting: a watch a reconcile needs has not finished its initial
// list within Options.CallTimeout; the reconcile is retried.
var errWatchStarting = errors.New("watch still starting")

// instances adds h to the cluster cache's informer for obj's kind and
// waits until h has seen every object the informer holds; the handler is
// removed when the member ends.
func (w *watches) instances(obj client.Object, h toolscache.ResourceEventHandler) error {
	m := w.m
	inf, err := m.cl.GetCache().GetInformer(m.ctx, obj)
	if err != nil {
		return fmt.Errorf("watching %s: %w", obj.GetObjectKind().GroupVersionKind(), err)
	}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return fmt.Errorf("watching %s: %w", obj.GetObjectKind().GroupVersionKind(), err)
	}
	m.addCleanup(func() { _ = inf.RemoveEventHandler(reg) })
	if err := waitSynced(m.ctx, reg); err != nil {
		return fmt.Errorf("watching %s: %w", obj.GetObjectKind().GroupVersionKind(), err)
	}
	return nil
}

// shared adds h to the cluster's shared handler for the metadata kind of
// meta, until the member ends; it returns once h has seen every object the
// informer holds (so the owned index is complete for the kind).
func (w *watches) shared(meta *metav1.PartialObjectMetadata, h toolscache.ResourceEventHandler) error {
	leave, err := w.fan.listen(w.m.ctx, w.m.cl, meta, h)
	if err != nil {
		return err
	}
	w.m.addCleanup(leave)
	return nil
}

// health makes the member hear when gvk starts or stops failing on its
// cluster (WatchHealthChanged), until the member ends. A cluster built
// without cacheopts.ReportWatchErrors has nothing to tell.
func (w *watches) health(gvk schema.GroupVersionKind) {
	h := cacheopts.HealthOf(w.m.cl)
	if h == nil {
		return
	}
	h.Listen(w.m.cluster.String(), w, gvk)
	w.m.addCleanup(func() { h.Forget(w) })
}

// informer is the informer of a kind the runtime watches on its own
// (outside the cluster's cache) over lw: it reports its calls' results to
// the cluster's watch health, when the cluster has one.
func (w *watches) informer(gvk schema.GroupVersionKind, lw *toolscache.ListWatch) toolscache.SharedIndexInformer {
	through := cacheopts.HealthOf(w.m.cl).Observe(gvk, lw)
	return toolscache.NewSharedIndexInformer(through, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
}

// WatchHealthChanged requeues every instance the member serves: each uses
// the graph's kinds, and a status that shows the change is written only
// by a reconcile. It implements cacheopts.Listener.
func (w *watches) WatchHealthChanged(gvk schema.GroupVersionKind) {
	m := w.m
	if m.ctx.Err() != nil {
		return
	}
	if gvk == m.g.Instance.GVK {
		m.crd.kindChanged()
	}
	for _, k := range m.states.keys() {
		m.enqueue(k)
	}
}

// tombstone unwraps a deleted object whose final state the informer missed.
func tombstone(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}
