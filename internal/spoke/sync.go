package spoke

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/fair"
)

// sync reconciles a live instance: finalizer and child kinds, children in
// DAG order, prune, status. An evaluation or apply failure is written to
// status and returned, so the request is retried with backoff. On success
// the instance's next resync is scheduled, and while a child is being
// deleted sync asks to run again after Options.DeletionPoll.
func (r reconciler) sync(inst *unstructured.Unstructured) (time.Duration, error) {
	m := r.m
	key := keyOf(inst)
	inst, err := m.writer.adopt(inst)
	if err != nil {
		return 0, err
	}
	full := m.resync.due(key)
	o := m.evaluator.evaluate(inst, full)
	m.refs.set(key, o.refs)

	current, err := r.inventory(inst)
	if err != nil {
		return 0, err
	}
	pruneErr := r.prune(toPrune(current, o))
	state, ready, err := m.writer.writeStatus(inst, o, pruneErr)
	m.states.set(key, state)
	if prev, _, _ := unstructured.NestedString(inst.Object, "status", "state"); state == contract.StateError && prev != contract.StateError {
		m.recorder.Eventf(inst, nil, corev1.EventTypeWarning, ready.Reason, "Reconcile", "%s", ready.Message)
	}
	if err != nil {
		return 0, err
	}
	if o.failed != nil {
		if o.failed.reason == reasonLimitExceeded {
			return 0, &limitFailure{o.failed.message}
		}
		return 0, fmt.Errorf("%s", o.failed.message)
	}
	if pruneErr != nil {
		return 0, pruneErr
	}
	if next := m.resync.schedule(key, full); next > 0 {
		m.enqueueAfter(key, next)
	}
	if len(o.deleting) > 0 {
		return m.c.opts.DeletionPoll, nil
	}
	return 0, nil
}

// prune deletes children no longer desired. Errors are joined; a child
// already gone is not an error.
func (r reconciler) prune(entries []InventoryEntry) error {
	var errs []error
	for _, e := range entries {
		if err := r.deleteChild(e); err != nil {
			errs = append(errs, fmt.Errorf("pruning %s: %w", e, err))
		}
	}
	return errors.Join(errs...)
}

// deleteChild asks the API server to delete one child in the background,
// on the precondition that it is still the object our records name (its
// UID): an object that took the name since is not ours and is left alone.
func (r reconciler) deleteChild(e InventoryEntry) error {
	m := r.m
	c, ok := m.owned.indexed(e.key())
	m.memory.forget(e.key())
	if !ok || c.uid == "" {
		m.dropChild(e.key())
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(e.gvk())
	u.SetNamespace(e.Namespace)
	u.SetName(e.Name)
	ctx, cancel := m.callCtx()
	defer cancel()
	err := m.cl.GetClient().Delete(ctx, u, client.PropagationPolicy("Background"), client.Preconditions{UID: &c.uid})
	if apierrors.IsNotFound(err) || isNoMatch(err) || apierrors.IsConflict(err) {
		m.dropChild(e.key())
		return nil
	}
	return err
}

// limitFailure is a reconcile's error when one of the graph's limits
// stopped its evaluation: its message is the instance's, and it is
// fair.ErrStoppedByLimit, so that its retry waits longer.
type limitFailure struct{ message string }

func (e *limitFailure) Error() string        { return e.message }
func (e *limitFailure) Is(target error) bool { return target == fair.ErrStoppedByLimit }
