package spoke

import (
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// finalize deletes a deleting instance's children wave by wave, in reverse
// DAG order: a wave starts only when every child of the previous one is
// gone. Then the finalizer is released. While it waits, the request is
// retried after Options.DeletionPoll (or sooner, on the child's delete
// event), and status says which child holds it once one was already being
// deleted when we looked: a child we have just asked to delete is usually
// gone a moment later, and writing status for each wave would nearly
// double the writes of a mass deletion.
func (r reconciler) finalize(inst *unstructured.Unstructured) (time.Duration, error) {
	m := r.m
	key := keyOf(inst)
	if !slices.Contains(inst.GetFinalizers(), contract.Finalizer) {
		m.forgetInstance(key, inst.GetUID())
		return 0, nil
	}
	children, err := r.inventory(inst)
	if err != nil {
		return 0, err
	}
	for _, wave := range deletionWaves(m.g, children) {
		blocker, held, err := r.deleteWave(wave)
		if err != nil {
			return 0, err
		}
		if blocker != nil {
			m.states.set(key, contract.StateDeleting)
			if !held {
				return m.c.opts.DeletionPoll, nil
			}
			if err := m.writer.patchStatus(inst, contract.StateDeleting, dated(wireConditions(inst), deletingConditions(blocker.String()), inst.GetGeneration()), nil, false); err != nil {
				return 0, err
			}
			return m.c.opts.DeletionPoll, nil
		}
	}
	finalizers := slices.DeleteFunc(slices.Clone(inst.GetFinalizers()), func(f string) bool { return f == contract.Finalizer })
	if _, err := m.writer.patchFinalizers(inst, finalizers); err != nil {
		return 0, err
	}
	m.forgetInstance(key, inst.GetUID())
	return 0, nil
}

// deletionWaves groups inventory entries by g's deletion waves; entries of
// nodes g no longer has go first.
func deletionWaves(g *graph.Graph, inv []InventoryEntry) [][]InventoryEntry {
	wave := map[string]int{}
	for i, nodes := range g.DeletionWaves {
		for _, n := range nodes {
			wave[n.ID] = i + 1
		}
	}
	out := make([][]InventoryEntry, len(g.DeletionWaves)+1)
	for _, e := range inv {
		i := wave[e.Node]
		out[i] = append(out[i], e)
	}
	return out
}

// deleteWave asks for every child of the wave to be deleted and returns the
// first one still present, or nil when the wave is gone; held reports that
// it was being deleted already (not just now, by us).
func (r reconciler) deleteWave(wave []InventoryEntry) (blocker *InventoryEntry, held bool, err error) {
	for i, e := range wave {
		gone, asked, err := r.deleteIfPresent(e)
		if err != nil {
			return nil, false, err
		}
		if !gone && (blocker == nil || !asked && !held) {
			blocker, held = &wave[i], !asked
		}
	}
	return blocker, held, nil
}

// deleteIfPresent reports whether the child is gone, asking the API server
// to delete it if it is present and not being deleted yet (asked). A child
// is present while the owned index has it (its delete event removes it);
// one the cache shows as being deleted is waited for.
func (r reconciler) deleteIfPresent(e InventoryEntry) (gone, asked bool, err error) {
	m := r.m
	if !m.owned.owns(e.key()) {
		return true, false, nil
	}
	if !m.kinds.has(e.gvk()) {
		// Not watched (see extraKinds): the accepted delete is all we see.
		err = r.deleteChild(e)
		m.dropChild(e.key())
		return err == nil, true, err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(e.gvk())
	ctx, cancel := m.callCtx()
	defer cancel()
	err = m.cl.GetCache().Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: e.Name}, obj)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return false, false, err
	case err == nil && obj.DeletionTimestamp != nil:
		return false, false, nil
	}
	if err := r.deleteChild(e); err != nil {
		return false, true, err
	}
	return !m.owned.owns(e.key()), true, nil
}
