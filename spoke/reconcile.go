package spoke

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// reconcileSafely runs reconcile, turning a panic into an error so that a
// bad expression or template never takes the process down.
func (m *member) reconcileSafely(key types.NamespacedName) (after time.Duration, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError("instance "+key.String(), r)
		}
	}()
	return m.reconcile(key)
}

// reconcile brings one instance's children in line with the graph, or
// deletes them when the instance is being deleted.
func (m *member) reconcile(key types.NamespacedName) (time.Duration, error) {
	select {
	case <-m.ready:
	case <-m.ctx.Done():
		return 0, nil
	}
	inst, err := m.instance(key)
	if apierrors.IsNotFound(err) {
		m.forgetInstance(key, "")
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if suspended(inst) {
		return 0, nil
	}
	if inst.GetDeletionTimestamp() != nil {
		return m.finalize(inst)
	}
	return m.sync(inst)
}

// instance reads the instance from the cache, or our own newer copy.
func (m *member) instance(key types.NamespacedName) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.g.Instance.GVK)
	if err := m.cl.GetCache().Get(m.ctx, key, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("reading instance %s: %w", key, err)
	}
	return m.fresher(u), nil
}

func suspended(u *unstructured.Unstructured) bool {
	a := u.GetAnnotations()
	return a[AnnotationReconcile] == ReconcileSuspended || a[AnnotationKroReconcile] == ReconcileSuspended
}
