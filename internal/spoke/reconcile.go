package spoke

import (
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// reconciler brings a member's instances in line with its graph: it syncs
// a live instance (sync.go), finalizes one being deleted (finalize.go),
// and releases every instance of a graph removed with its instances
// orphaned (release.go). It finds an instance's children with the owned
// index (inventory.go), evaluates the graph with the evaluator, and
// writes the instance with the instanceWriter.
type reconciler struct{ m *member }

// reconcileSafely runs reconcile, turning a panic into an error so that a
// bad expression or template never takes the process down.
func (r reconciler) reconcileSafely(key types.NamespacedName) (after time.Duration, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError("instance "+key.String(), p)
		}
	}()
	return r.reconcile(key)
}

// reconcile brings one instance's children in line with the graph, or
// deletes them when the instance is being deleted.
func (r reconciler) reconcile(key types.NamespacedName) (time.Duration, error) {
	m := r.m
	if err := m.waitReady(); err != nil {
		return 0, err
	}
	if m.ctx.Err() != nil {
		return 0, nil
	}
	inst, wait, err := r.instance(key)
	if err == nil && inst == nil {
		return wait, nil // the cache is catching up (instance_heads.go)
	}
	if apierrors.IsNotFound(err) {
		m.forgetInstance(key, "")
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if m.c.v.Removal == RemovalRelease {
		return r.release(inst)
	}
	// Deletion comes first, as in kro: a suspended instance is still
	// deleted when asked, and a graph being removed serves deletions only.
	if inst.GetDeletionTimestamp() != nil {
		return r.finalize(inst)
	}
	if suspended(inst) || m.c.v.Removal == RemovalFinalize {
		return 0, nil
	}
	return r.sync(inst)
}

// release takes our finalizer off the instance and forgets it, leaving its
// children in place: the graph is being removed with its instances
// orphaned.
func (r reconciler) release(inst *unstructured.Unstructured) (time.Duration, error) {
	if slices.Contains(inst.GetFinalizers(), contract.Finalizer) {
		if err := r.markReleased(inst); err != nil { // release.go
			return 0, err
		}
		rest := slices.DeleteFunc(slices.Clone(inst.GetFinalizers()), func(f string) bool { return f == contract.Finalizer })
		if _, err := r.m.writer.patchFinalizers(inst, rest); err != nil {
			return 0, err
		}
	}
	r.m.forgetInstance(keyOf(inst), inst.GetUID())
	return 0, nil
}

// instance reads the instance from the cache, or our own newer copy, as
// fresh as the metadata watch showed it (instance_heads.go). While the
// cache catches up it returns no instance and how long to wait.
func (r reconciler) instance(key types.NamespacedName) (*unstructured.Unstructured, time.Duration, error) {
	m := r.m
	u, err := r.cached(key)
	if err != nil {
		return nil, 0, err
	}
	u, wait, err := r.catchUp(key, u)
	switch {
	case err != nil:
		return nil, 0, err
	case wait > 0:
		return nil, wait, nil
	case u == nil:
		return nil, 0, apierrors.NewNotFound(schema.GroupResource{Group: m.g.Instance.GVK.Group, Resource: m.g.Instance.Plural}, key.Name)
	}
	return m.withDefaults(u), 0, nil
}

// cached is the instance the full informer holds, or our own newer copy;
// if the informer holds none, our own copy of an instance it has not
// delivered yet while the metadata watch shows that instance, else nil.
func (r reconciler) cached(key types.NamespacedName) (*unstructured.Unstructured, error) {
	m := r.m
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.g.Instance.GVK)
	ctx, cancel := m.callCtx()
	defer cancel()
	if err := m.cl.GetCache().Get(ctx, key, u); err != nil {
		if apierrors.IsNotFound(err) {
			return m.heads.showing(m.instances.ours(key)), nil
		}
		return nil, fmt.Errorf("reading instance %s: %w", key, err)
	}
	return m.instances.fresher(u), nil
}

// suspended reports whether the instance asks not to be reconciled: either
// annotation set to "suspended" or kro's legacy "disabled", in any case, as
// kro v0.9.4 accepts them.
func suspended(u *unstructured.Unstructured) bool {
	a := u.GetAnnotations()
	return isSuspendValue(a[contract.AnnotationReconcile]) || isSuspendValue(a[contract.AnnotationKroReconcile])
}

func isSuspendValue(v string) bool {
	return strings.EqualFold(v, contract.ReconcileSuspended) || strings.EqualFold(v, reconcileLegacyDisabled)
}

// reconcileLegacyDisabled is kro's legacy alias of contract.ReconcileSuspended.
const reconcileLegacyDisabled = "disabled"
