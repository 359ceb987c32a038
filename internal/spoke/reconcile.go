package spoke

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// reconciler brings a member's instances in line with its graph: it reads
// the instance, then syncs a live one (sync.go), has the engine finalize
// one being deleted, and release every instance of a graph removed with
// its instances orphaned. Every child lives in the instance's own cluster.
type reconciler struct{ m *member }

// reconcileSafely runs reconcile, turning a panic into an error so that a
// bad expression or template never takes the process down.
func (r reconciler) reconcileSafely(key types.NamespacedName) (after time.Duration, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic while evaluating instance %s: %v", key, p)
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
		m.states.set(key, "")
		return 0, m.engine.Release(inst, m.engine.HomeReach())
	}
	// Deletion comes first, as in kro: a suspended instance is still
	// deleted when asked, and a graph being removed serves deletions only.
	if inst.GetDeletionTimestamp() != nil {
		return r.finalize(inst)
	}
	if instance.Suspended(inst) || m.c.v.Removal == RemovalFinalize {
		return 0, nil
	}
	return r.sync(inst)
}

// finalize has the engine delete the instance's children in reverse DAG
// waves; while they go, the instance counts as DELETING.
func (r reconciler) finalize(inst *unstructured.Unstructured) (time.Duration, error) {
	m := r.m
	after, err := m.engine.Finalize(inst, m.engine.HomeReach())
	switch {
	case err != nil || after > 0:
		m.states.set(keyOf(inst), contract.StateDeleting)
	default:
		m.states.set(keyOf(inst), "")
	}
	return after, err
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
	return m.engine.Defaulted(u), 0, nil
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
			return m.heads.showing(m.engine.Writes().Ours(key)), nil
		}
		return nil, fmt.Errorf("reading instance %s: %w", key, err)
	}
	return m.engine.Writes().Fresher(u), nil
}
