package instance

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// ErrConflict is wrapped by the error of a write of an instance refused
// because our copy was stale (somebody wrote it since we read it): the
// caller retries quietly, with the fresh copy its next read brings.
var ErrConflict = errors.New("instance changed meanwhile")

// Bookkeep writes, if the instance lacks any of them, our finalizer, the
// graph's child kinds (contract.AnnotationChildKinds) and the driver's
// annotations (hub graphs: the clusters an instance writes to), in one
// patch guarded by the resourceVersion read: all must be in place before
// any child is applied. Where the API server runs our admission policy,
// new instances arrive with them and Bookkeep writes nothing. It returns
// the instance as written (inst itself when nothing was).
func (e *Engine) Bookkeep(inst *unstructured.Unstructured, annotations map[string]string) (*unstructured.Unstructured, error) {
	metadata := map[string]any{}
	if !slices.Contains(inst.GetFinalizers(), contract.Finalizer) {
		metadata["finalizers"] = append(inst.GetFinalizers(), contract.Finalizer)
	}
	ann := map[string]any{}
	have := contract.ChildKinds(inst)
	if missing := e.kinds.missing(have); len(missing) > 0 {
		ann[contract.AnnotationChildKinds] = contract.EncodeChildKinds(append(have, missing...))
	}
	shown := inst.GetAnnotations()
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if shown[k] != annotations[k] {
			ann[k] = annotations[k]
		}
	}
	if len(ann) > 0 {
		metadata["annotations"] = ann
	}
	if len(metadata) == 0 {
		return inst, nil
	}
	metadata["resourceVersion"] = inst.GetResourceVersion()
	return instanceWriter{e}.patch(inst, map[string]any{"metadata": metadata}, false)
}

// RemoveFinalizer takes our finalizer off the instance, guarded by the
// resourceVersion read: a stale copy fails with ErrConflict rather than
// drop someone else's finalizer. It returns the instance as written.
func (e *Engine) RemoveFinalizer(inst *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	rest := slices.DeleteFunc(slices.Clone(inst.GetFinalizers()), func(f string) bool { return f == contract.Finalizer })
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": inst.GetResourceVersion(), "finalizers": rest}}
	return instanceWriter{e}.patch(inst, patch, false)
}

// instanceWriter writes an engine's instances in their cluster: a merge
// patch each, whose answer is remembered until the instance watch delivers
// it (Writes).
type instanceWriter struct{ e *Engine }

// annotate sets (or, with value "", removes) one annotation of the
// instance, in a merge patch.
func (w instanceWriter) annotate(inst *unstructured.Unstructured, key, value string) (*unstructured.Unstructured, error) {
	var v any = value
	if value == "" {
		v = nil
	}
	return w.patch(inst, map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}}, false)
}

// patch sends a merge patch to the instance or its status in the home
// cluster and remembers the answer until the instance watch delivers it
// (Writes).
func (w instanceWriter) patch(inst *unstructured.Unstructured, patch map[string]any, status bool) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encoding patch: %w", err)
	}
	e := w.e
	out := inst.DeepCopy()
	raw := client.RawPatch(types.MergePatchType, data)
	owner := client.FieldOwner(e.opts.FieldManager)
	ctx, cancel := e.callCtx()
	defer cancel()
	err = e.writes.writing(keyOf(inst), out, func() error {
		if status {
			return e.home.GetClient().Status().Patch(ctx, out, raw, owner)
		}
		return e.home.GetClient().Patch(ctx, out, raw, owner)
	})
	if apierrors.IsConflict(err) {
		return nil, fmt.Errorf("%w: %v", ErrConflict, err)
	}
	if err != nil {
		return nil, fmt.Errorf("patching instance %s: %w", keyOf(inst), err)
	}
	return out, nil
}
