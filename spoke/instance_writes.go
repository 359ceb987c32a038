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

// patchMeta writes the instance's finalizers (when non-nil) and inventory
// (when non-nil) in one merge patch, guarded by the resourceVersion we read:
// a stale copy fails with errConflict rather than overwrite someone else's
// change. It returns the instance as written.
func (m *member) patchMeta(inst *unstructured.Unstructured, finalizers []string, inventory *string) (*unstructured.Unstructured, error) {
	md := map[string]any{"resourceVersion": inst.GetResourceVersion()}
	if finalizers != nil {
		md["finalizers"] = finalizers
	}
	if inventory != nil {
		var v any = *inventory
		if *inventory == "" {
			v = nil
		}
		md["annotations"] = map[string]any{AnnotationInventory: v}
	}
	return m.patchInstance(inst, map[string]any{"metadata": md}, false)
}

// patchInstance sends a merge patch to the instance or its status and
// remembers the result until the cache catches up.
func (m *member) patchInstance(inst *unstructured.Unstructured, patch map[string]any, status bool) (*unstructured.Unstructured, error) {
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
	m.remember(out)
	return out, nil
}

func isNoMatch(err error) bool { return err != nil && meta.IsNoMatchError(err) }
