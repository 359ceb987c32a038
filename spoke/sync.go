package spoke

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sync reconciles a live instance: finalizer, children in DAG order, prune,
// inventory, status. An evaluation or apply failure is written to status and
// returned, so the request is retried with backoff.
func (m *member) sync(inst *unstructured.Unstructured) (time.Duration, error) {
	key := keyOf(inst)
	if !slices.Contains(inst.GetFinalizers(), Finalizer) {
		var err error
		if inst, err = m.adopt(inst); err != nil {
			return 0, err
		}
	}
	o := m.evaluate(inst)
	m.setRefs(key, o.refs)

	old := readInventory(inst)
	keep, prune := planInventory(old, o)
	pruneErr := m.prune(prune)
	if pruneErr != nil {
		keep = append(keep, prune...)
	}
	state, err := m.writeInventoryAndStatus(inst, old, keep, o, pruneErr)
	m.setState(key, state)
	if err != nil {
		return 0, err
	}
	if o.failed != nil {
		return 0, fmt.Errorf("%s", o.failed.message)
	}
	return 0, pruneErr
}

// writeInventoryAndStatus writes the inventory (if it changed) and the
// status (if it changed) concurrently: they touch different parts of the
// instance, and the inventory patch sets only our own annotation, so it
// needs no resourceVersion guard. Neither answer is remembered, since which
// of the two is newer is unknown.
func (m *member) writeInventoryAndStatus(inst *unstructured.Unstructured, old, keep []InventoryEntry, o *outcome, pruneErr error) (string, error) {
	var invErr error
	var wg sync.WaitGroup
	next := encodeInventory(keep)
	both := next != encodeInventory(old)
	if both {
		wg.Go(func() { invErr = m.patchInventory(inst, next) })
	}
	state, statusErr := m.writeStatus(inst, o, pruneErr, !both)
	wg.Wait()
	return state, errors.Join(invErr, statusErr)
}

// prune deletes children no longer desired. Errors are joined; a child
// already gone is not an error.
func (m *member) prune(entries []InventoryEntry) error {
	var errs []error
	for _, e := range entries {
		if err := m.deleteChild(e); err != nil {
			errs = append(errs, fmt.Errorf("pruning %s: %w", e, err))
		}
	}
	return errors.Join(errs...)
}

// deleteChild asks the API server to delete one child in the background.
func (m *member) deleteChild(e InventoryEntry) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(e.gvk())
	u.SetNamespace(e.Namespace)
	u.SetName(e.Name)
	err := m.cl.GetClient().Delete(m.ctx, u, client.PropagationPolicy("Background"))
	m.forgetChild(e.key())
	if apierrors.IsNotFound(err) || isNoMatch(err) {
		return nil
	}
	return err
}
