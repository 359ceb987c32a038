package hubgraph

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// Removing a hub graph: from Removing on, the graph's instances are no
// longer reconciled. An instance being deleted is still finalized (its
// children deleted in reverse waves), unless release was asked, in which
// case every instance is released: its children, marked released in every
// cluster that answers, stay where they are and are never collected as
// orphans, and its finalizer is taken off. Held says how many instances still hold the finalizer; the
// caller stops the graph once none does.

// Removing puts the named graph's server in removal mode; release takes
// the finalizer off every instance instead of waiting for their deletion.
// It requeues every instance so that the mode applies at once.
func (r *Runtime) Removing(name string, release bool) {
	r.mu.Lock()
	s := r.graphs[name]
	r.mu.Unlock()
	if s == nil {
		return
	}
	s.removal.Store(&removalMode{release: release})
	go s.requeueAll()
}

// Held returns how many instances of the named graph hold the runtime's
// finalizer on the hub (0 for a graph not served).
func (r *Runtime) Held(ctx context.Context, name string) (int, error) {
	r.mu.Lock()
	s := r.graphs[name]
	r.mu.Unlock()
	if s == nil {
		return 0, nil
	}
	list, err := s.list(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		if controllerutil.ContainsFinalizer(&list.Items[i], contract.Finalizer) {
			n++
		}
	}
	return n, nil
}

type removalMode struct{ release bool }

// removingReconcile is Reconcile in removal mode.
func (s *server) removingReconcile(ctx context.Context, inst *unstructured.Unstructured, mode *removalMode) (reconcile.Result, error) {
	switch {
	case mode.release:
		return reconcile.Result{}, s.engine.Load().Release(inst, s.recorded(ctx, inst, nil))
	case inst.GetDeletionTimestamp() != nil:
		return s.finalize(ctx, inst)
	}
	return reconcile.Result{}, nil
}

// list lists the graph's instances from the hub's cache.
func (s *server) list(ctx context.Context) (*unstructured.UnstructuredList, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(s.g.Instance.GVK.GroupVersion().WithKind(s.g.Instance.GVK.Kind + "List"))
	if err := s.rt.hub().GetCache().List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing %s instances on the hub: %w", s.g.Instance.GVK.Kind, err)
	}
	return list, nil
}

// requeueAll requeues every instance of the graph.
func (s *server) requeueAll() {
	if s.ctx == nil {
		return
	}
	list, err := s.list(s.ctx)
	if err != nil {
		s.log.Info("requeueing every instance", "error", err.Error())
		return
	}
	for i := range list.Items {
		s.enqueue(keyOf(list.Items[i].GetNamespace(), list.Items[i].GetName()))
	}
}
