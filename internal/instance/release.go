package instance

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// Release takes our finalizer off the instance and forgets it, leaving its
// children in place: the graph is being removed with its instances
// orphaned. Every child in every cluster of clusters is first marked with
// contract.AnnotationReleased: it is left in place on purpose, and must
// not be collected as an orphan (orphans.go) when the instance is deleted
// later, even by a process that serves the graph again. Each write names
// the child's UID, so an object that took a child's name since is not
// written. A cluster that cannot be reached does not hold the release: its
// children are left unmarked (and logged).
func (e *Engine) Release(inst *unstructured.Unstructured, clusters []Reach) error {
	if slices.Contains(inst.GetFinalizers(), contract.Finalizer) {
		var errs []error
		for _, r := range clusters {
			err := r.Err
			if err == nil {
				err = e.places.of(e, r.Cluster).markReleased(inst)
			}
			if r.Err != nil || unreachable(err) {
				e.log.Info("releasing an instance without marking its children in a cluster it cannot reach",
					"instance", keyOf(inst).String(), "cluster", r.Name, "reason", err.Error())
				continue
			}
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if _, err := e.RemoveFinalizer(inst); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	e.ForgetInstance(keyOf(inst), inst.GetUID())
	return nil
}

// markReleased marks the instance's children in the place's cluster.
func (p *place) markReleased(inst *unstructured.Unstructured) error {
	children, err := p.inventory(inst)
	if err != nil {
		return err
	}
	var errs []error
	for _, en := range children {
		if err := p.markChildReleased(en); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *place) markChildReleased(en Entry) error {
	c, ok := p.owned.indexed(en.key())
	if !ok || c.uid == "" {
		return nil
	}
	if p.e.kinds.has(en.gvk()) {
		meta, err := p.childMeta(en)
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
	obj.SetGroupVersionKind(en.gvk())
	obj.SetNamespace(en.Namespace)
	obj.SetName(en.Name)
	ctx, cancel := p.callCtx()
	defer cancel()
	err = p.c.GetClient().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(p.e.opts.FieldManager))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) || isNoMatch(err) {
		return nil // gone, or another object has the name now
	}
	if err != nil {
		return fmt.Errorf("marking %s released%s: %w", en, p.where(), err)
	}
	return nil
}
