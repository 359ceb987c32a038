package spoke

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

var (
	_ toolscache.ResourceEventHandler = instanceHandler{}
	_ toolscache.ResourceEventHandler = childHandler{}
	_ toolscache.ResourceEventHandler = externalHandler{}
)

// instanceHandler enqueues instances. Updates that only touch status,
// finalizers or our child kinds are our own writes and are ignored.
type instanceHandler struct{ m *member }

func (h instanceHandler) OnAdd(obj any, _ bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		h.m.observeInstance(u)
		h.m.enqueue(keyOf(u))
	}
}

func (h instanceHandler) OnUpdate(oldObj, newObj any) {
	o, ok1 := oldObj.(*unstructured.Unstructured)
	n, ok2 := newObj.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return
	}
	h.m.observeInstance(n)
	if instanceChanged(o, n) {
		h.m.enqueue(keyOf(n))
	}
}

func (h instanceHandler) OnDelete(obj any) {
	if u, ok := tombstone(obj).(*unstructured.Unstructured); ok {
		h.m.enqueue(keyOf(u))
	}
}

// instanceChanged reports whether an update is one the reconciler must see.
func instanceChanged(o, n *unstructured.Unstructured) bool {
	if o.GetGeneration() != n.GetGeneration() || o.GetUID() != n.GetUID() {
		return true
	}
	if (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) {
		return true
	}
	if !maps.Equal(o.GetLabels(), n.GetLabels()) {
		return true
	}
	oa, na := maps.Clone(o.GetAnnotations()), maps.Clone(n.GetAnnotations())
	delete(oa, AnnotationChildKinds)
	delete(na, AnnotationChildKinds)
	return !maps.Equal(oa, na)
}

// childHandler turns events on our children (metadata only) into requeues
// of their owner, unless the event merely echoes our own apply.
type childHandler struct {
	m   *member
	gvk schema.GroupVersionKind
}

func (h childHandler) OnAdd(obj any, _ bool) { h.observed(obj) }

func (h childHandler) OnUpdate(_, newObj any) { h.observed(newObj) }

func (h childHandler) OnDelete(obj any) {
	meta, owner, ok := h.ours(tombstone(obj))
	if !ok {
		return
	}
	key := childKey{gvk: h.gvk, namespace: meta.Namespace, name: meta.Name}
	h.m.childDeleted(key)
	h.m.dropChild(key)
	h.m.enqueue(owner)
}

func (h childHandler) observed(obj any) {
	meta, owner, ok := h.ours(obj)
	if !ok {
		return
	}
	key := childKey{gvk: h.gvk, namespace: meta.Namespace, name: meta.Name}
	h.m.recordChild(key, types.UID(meta.Labels[LabelInstanceUID]), meta.Labels[LabelNodeID])
	if h.m.childObserved(key, meta.ResourceVersion) {
		h.m.enqueue(owner)
	}
}

// ours returns the object and its owning instance if it belongs to this
// member's graph.
func (h childHandler) ours(obj any) (*metav1.PartialObjectMetadata, types.NamespacedName, bool) {
	meta, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || meta.Labels[LabelGraph] != h.m.g.Name {
		return nil, types.NamespacedName{}, false
	}
	owner, ok := h.m.ownerOf(meta.Labels)
	return meta, owner, ok
}

// externalHandler requeues the instances whose external references match
// the object that changed.
type externalHandler struct {
	m   *member
	gvk schema.GroupVersionKind
}

func (h externalHandler) OnAdd(obj any, _ bool)  { h.changed(obj) }
func (h externalHandler) OnUpdate(_, newObj any) { h.changed(newObj) }
func (h externalHandler) OnDelete(obj any)       { h.changed(tombstone(obj)) }
func (h externalHandler) changed(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	for _, key := range h.m.referrers(h.gvk, u) {
		h.m.enqueue(key)
	}
}
