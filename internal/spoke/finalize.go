package spoke

import (
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// finalize deletes a deleting instance's children wave by wave, in reverse
// DAG order: a wave starts only when every child of the previous one is
// gone. Then the finalizer is released. While it waits, status says which
// child holds it, and the request is retried after Options.DeletionPoll (or
// sooner, on the child's delete event).
func (m *member) finalize(inst *unstructured.Unstructured) (time.Duration, error) {
	key := keyOf(inst)
	if !slices.Contains(inst.GetFinalizers(), contract.Finalizer) {
		m.forgetInstance(key, inst.GetUID())
		return 0, nil
	}
	children, err := m.inventory(inst)
	if err != nil {
		return 0, err
	}
	for _, wave := range m.deletionWaves(children) {
		blocker, err := m.deleteWave(wave)
		if err != nil {
			return 0, err
		}
		if blocker != nil {
			m.setState(key, contract.StateDeleting)
			if err := m.patchStatus(inst, contract.StateDeleting, dated(wireConditions(inst), deletingConditions(blocker.String()), inst.GetGeneration()), nil, false); err != nil {
				return 0, err
			}
			return m.c.opts.DeletionPoll, nil
		}
	}
	finalizers := slices.DeleteFunc(slices.Clone(inst.GetFinalizers()), func(f string) bool { return f == contract.Finalizer })
	if _, err := m.patchFinalizers(inst, finalizers); err != nil {
		return 0, err
	}
	m.forgetInstance(key, inst.GetUID())
	return 0, nil
}

// deletionWaves groups inventory entries by the graph's deletion waves;
// entries of nodes the graph no longer has go first.
func (m *member) deletionWaves(inv []InventoryEntry) [][]InventoryEntry {
	wave := map[string]int{}
	for i, nodes := range m.g.DeletionWaves {
		for _, n := range nodes {
			wave[n.ID] = i + 1
		}
	}
	out := make([][]InventoryEntry, len(m.g.DeletionWaves)+1)
	for _, e := range inv {
		i := wave[e.Node]
		out[i] = append(out[i], e)
	}
	return out
}

// deleteWave asks for every child of the wave to be deleted and returns the
// first one still present, or nil when the wave is gone.
func (m *member) deleteWave(wave []InventoryEntry) (*InventoryEntry, error) {
	var blocker *InventoryEntry
	for i, e := range wave {
		gone, err := m.deleteIfPresent(e)
		if err != nil {
			return nil, err
		}
		if !gone && blocker == nil {
			blocker = &wave[i]
		}
	}
	return blocker, nil
}

// deleteIfPresent reports whether the child is gone, asking the API server
// to delete it if it is present and not being deleted yet. A child is
// present while the owned index has it (its delete event removes it); one
// the cache shows as being deleted is waited for.
func (m *member) deleteIfPresent(e InventoryEntry) (bool, error) {
	if !m.owns(e.key()) {
		return true, nil
	}
	if !m.graphKind(e.gvk()) {
		// Not watched (see extraKinds): the accepted delete is all we see.
		err := m.deleteChild(e)
		m.dropChild(e.key())
		return err == nil, err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(e.gvk())
	ctx, cancel := m.callCtx()
	defer cancel()
	err := m.cl.GetCache().Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: e.Name}, obj)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return false, err
	case err == nil && obj.DeletionTimestamp != nil:
		return false, nil
	}
	if err := m.deleteChild(e); err != nil {
		return false, err
	}
	return !m.owns(e.key()), nil
}
