package spoke

import (
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// markReleased marks every child of an instance being released with
// contract.AnnotationReleased, before our finalizer is taken off it: its
// children are left in place on purpose, and must not be collected as
// orphans (orphans.go) when the instance is deleted later, even by a
// process that serves the graph again. Each write names the child's UID,
// so an object that took a child's name since is not written.
func (r reconciler) markReleased(inst *unstructured.Unstructured) error {
	children, err := r.inventory(inst)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range children {
		if err := r.markChildReleased(e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r reconciler) markChildReleased(e InventoryEntry) error {
	m := r.m
	c, ok := m.owned.indexed(e.key())
	if !ok || c.uid == "" {
		return nil
	}
	if m.kinds.has(e.gvk()) {
		meta, err := m.childMeta(e)
		if err != nil {
			return err
		}
		if meta == nil || meta.UID != c.uid || meta.Annotations[contract.AnnotationReleased] == "true" {
			return nil
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": c.uid, "annotations": map[string]any{contract.AnnotationReleased: "true"}}})
	if err != nil {
		return err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(e.gvk())
	obj.SetNamespace(e.Namespace)
	obj.SetName(e.Name)
	ctx, cancel := m.callCtx()
	defer cancel()
	err = m.cl.GetClient().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(m.c.opts.FieldManager))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) || isNoMatch(err) {
		return nil // gone, or another object has the name now
	}
	if err != nil {
		return fmt.Errorf("marking %s released: %w", e, err)
	}
	return nil
}
