package spoke

import (
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchFinalizers writes the instance's finalizers in a merge patch guarded
// by the resourceVersion we read: a stale copy fails with errConflict rather
// than drop someone else's finalizer. It returns the instance as written.
func (m *member) patchFinalizers(inst *unstructured.Unstructured, finalizers []string) (*unstructured.Unstructured, error) {
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": inst.GetResourceVersion(), "finalizers": finalizers}}
	return m.patchInstance(inst, patch, false, true)
}

// adopt adds our finalizer and, in the same write, the inventory of the
// children that can be named before any is applied, so that a new instance
// costs one write of its own before its children rather than two.
func (m *member) adopt(inst *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	metadata := map[string]any{
		"resourceVersion": inst.GetResourceVersion(),
		"finalizers":      append(inst.GetFinalizers(), Finalizer),
	}
	old := readInventory(inst)
	if next := encodeInventory(append(old, m.plannedInventory(inst)...)); next != encodeInventory(old) {
		metadata["annotations"] = map[string]any{AnnotationInventory: next}
	}
	return m.patchInstance(inst, map[string]any{"metadata": metadata}, false, true)
}

// patchInventory sets our inventory annotation, unguarded: no one else
// writes that key. Its answer is not remembered (see sync).
func (m *member) patchInventory(inst *unstructured.Unstructured, inventory string) error {
	var v any = inventory
	if inventory == "" {
		v = nil
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationInventory: v}}}
	_, err := m.patchInstance(inst, patch, false, false)
	return err
}

// patchInstance sends a merge patch to the instance or its status and, if
// asked, remembers the result until the cache catches up.
func (m *member) patchInstance(inst *unstructured.Unstructured, patch map[string]any, status, remember bool) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encoding patch: %w", err)
	}
	out := inst.DeepCopy()
	raw := client.RawPatch(types.MergePatchType, data)
	if status {
		err = m.cl.GetClient().Status().Patch(m.ctx, out, raw)
	} else {
		err = m.cl.GetClient().Patch(m.ctx, out, raw)
	}
	if apierrors.IsConflict(err) {
		return nil, fmt.Errorf("%w: %v", errConflict, err)
	}
	if err != nil {
		return nil, fmt.Errorf("patching instance %s: %w", keyOf(inst), err)
	}
	if remember {
		m.remember(out)
	} else {
		m.forgetWritten(keyOf(out))
	}
	return out, nil
}

func isNoMatch(err error) bool { return err != nil && meta.IsNoMatchError(err) }
