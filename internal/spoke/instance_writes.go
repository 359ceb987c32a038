package spoke

import (
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// patchFinalizers writes the instance's finalizers in a merge patch guarded
// by the resourceVersion we read: a stale copy fails with errConflict rather
// than drop someone else's finalizer. It returns the instance as written.
func (w instanceWriter) patchFinalizers(inst *unstructured.Unstructured, finalizers []string) (*unstructured.Unstructured, error) {
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": inst.GetResourceVersion(), "finalizers": finalizers}}
	return w.patchInstance(inst, patch, false)
}

// adopt writes our finalizer and the graph's child kinds, in one patch
// guarded by the resourceVersion read, if the instance lacks either: both
// must be in place before any child is applied. Where the API server runs
// our admission policy (contract.AdmissionPolicy), new instances arrive with both and
// adopt writes nothing.
func (w instanceWriter) adopt(inst *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	metadata := map[string]any{}
	if !slices.Contains(inst.GetFinalizers(), contract.Finalizer) {
		metadata["finalizers"] = append(inst.GetFinalizers(), contract.Finalizer)
	}
	have := contract.ChildKinds(inst)
	if missing := w.m.kinds.missing(have); len(missing) > 0 {
		metadata["annotations"] = map[string]any{contract.AnnotationChildKinds: contract.EncodeChildKinds(append(have, missing...))}
	}
	if len(metadata) == 0 {
		return inst, nil
	}
	metadata["resourceVersion"] = inst.GetResourceVersion()
	return w.patchInstance(inst, map[string]any{"metadata": metadata}, false)
}

// patchInstance sends a merge patch to the instance or its status and
// remembers the result until the cache catches up.
func (w instanceWriter) patchInstance(inst *unstructured.Unstructured, patch map[string]any, status bool) (*unstructured.Unstructured, error) {
	m := w.m
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encoding patch: %w", err)
	}
	out := inst.DeepCopy()
	raw := client.RawPatch(types.MergePatchType, data)
	owner := client.FieldOwner(m.c.opts.FieldManager)
	ctx, cancel := m.callCtx()
	defer cancel()
	if status {
		err = m.cl.GetClient().Status().Patch(ctx, out, raw, owner)
	} else {
		err = m.cl.GetClient().Patch(ctx, out, raw, owner)
	}
	if apierrors.IsConflict(err) {
		return nil, fmt.Errorf("%w: %v", errConflict, err)
	}
	if err != nil {
		return nil, fmt.Errorf("patching instance %s: %w", keyOf(inst), err)
	}
	m.instances.remember(out)
	return out, nil
}
