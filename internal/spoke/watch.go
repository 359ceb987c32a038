package spoke

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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

// ensureWatch makes sure the member listens to the child kind gvk, starting
// the informer in the cluster's cache if needed (which waits for it to
// sync).
func (m *member) ensureWatch(gvk schema.GroupVersionKind) error {
	return m.startOnce(watchKey{gvk: gvk}, func() error {
		m.listenHealth(gvk)
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvk)
		return m.listenShared(meta, childHandler{m: m, gvk: gvk})
	})
}

// startOnce runs start for key unless it ran already with success.
// Concurrent callers for one key share one start; a failed start is retried
// by the next caller. The start runs in a goroutine of its own, bound to the
// member, and callers wait for it at most Options.CallTimeout: a cluster
// slow to list a kind holds no worker longer than any other call, and the
// watch keeps starting meanwhile.
func (m *member) startOnce(key any, start func() error) error {
	m.mu.Lock()
	w, ok := m.watches[key]
	if !ok {
		w = &watch{done: make(chan struct{})}
		m.watches[key] = w
		go func() {
			w.err = start()
			if w.err != nil {
				m.mu.Lock()
				if m.watches[key] == w {
					delete(m.watches, key)
				}
				m.mu.Unlock()
			}
			close(w.done)
		}()
	}
	m.mu.Unlock()
	ctx, cancel := m.callCtx()
	defer cancel()
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errWatchStarting, ctx.Err())
	}
}

// errWatchStarting: a watch a reconcile needs has not finished its initial
// list within Options.CallTimeout; the reconcile is retried.
var errWatchStarting = errors.New("watch still starting")

// watch adds h to the cluster cache's informer for obj's kind and waits
// until h has seen every object the informer holds (so the owned-children
// index is complete); the handler is removed when the member ends. The
// informer itself belongs to the cluster and stops with it.
func (m *member) watch(obj client.Object, h toolscache.ResourceEventHandler) error {
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

// tombstone unwraps a deleted object whose final state the informer missed.
func tombstone(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}
