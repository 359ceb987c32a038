package spoke

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

var (
	_ toolscache.ResourceEventHandler = instanceHandler{}
	_ toolscache.ResourceEventHandler = childHandler{}
	_ toolscache.ResourceEventHandler = externalHandler{}
)

// instanceHandler enqueues instances. Updates that only touch status,
// finalizers or our child kinds are our own writes and are ignored. Every
// event also moves the registration's tally (counts.go).
type instanceHandler struct {
	m     *member
	tally *instanceTally
}

func (h instanceHandler) OnAdd(obj any, _ bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		h.tally.added(u)
		h.m.observeInstance(u)
		h.m.watches.weigh(u) // instance_heads.go
		if h.m.heads.arrived(keyOf(u)) || !h.m.heads.shown(u) {
			h.m.enqueue(keyOf(u))
		}
	}
}

func (h instanceHandler) OnUpdate(oldObj, newObj any) {
	o, ok1 := oldObj.(*unstructured.Unstructured)
	n, ok2 := newObj.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return
	}
	h.tally.updated(o, n)
	h.m.observeInstance(n)
	h.m.watches.weigh(n)
	if h.m.heads.arrived(keyOf(n)) || metaChanged(o, n) && !h.m.heads.shown(n) {
		h.m.enqueue(keyOf(n))
	}
}

func (h instanceHandler) OnDelete(obj any) {
	if u, ok := tombstone(obj).(*unstructured.Unstructured); ok {
		h.tally.deleted(u)
		h.m.orphans.suspect(u.GetUID())
		h.m.enqueue(keyOf(u))
	}
}

// metaChanged reports whether an update is one the reconciler must see.
func metaChanged(o, n metav1.Object) bool {
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
	delete(oa, contract.AnnotationChildKinds)
	delete(na, contract.AnnotationChildKinds)
	return !maps.Equal(oa, na)
}

// childHandler turns events on our children (metadata only) into requeues
// of their owner, unless the event merely echoes our own apply. A child is
// ours if it carries our graph's labels, or if our records say so: a child
// whose labels somebody stripped is still ours, and the change is drift to
// put back.
type childHandler struct {
	m   *member
	gvk schema.GroupVersionKind
}

func (h childHandler) OnAdd(obj any, _ bool) { h.observed(obj) }

func (h childHandler) OnUpdate(_, newObj any) { h.observed(newObj) }

func (h childHandler) OnDelete(obj any) {
	meta, ok := tombstone(obj).(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	key := h.key(meta)
	owner, ok := h.owner(key, meta)
	if !ok {
		return
	}
	h.m.memory.deleted(key)
	h.m.dropChild(key)
	h.m.enqueue(owner)
}

func (h childHandler) observed(obj any) {
	meta, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	key := h.key(meta)
	if h.labelled(meta) {
		h.m.recordChild(key, types.UID(meta.Labels[contract.LabelInstanceUID]), meta.Labels[contract.LabelNodeID], meta.UID)
	}
	owner, ok := h.owner(key, meta)
	if ok && h.m.memory.observed(key, meta.ResourceVersion) {
		h.m.enqueue(owner)
	}
}

func (h childHandler) key(meta *metav1.PartialObjectMetadata) childKey {
	return newChildKey(h.gvk, meta.Namespace, meta.Name)
}

// labelled reports whether the object carries our graph's owner labels.
func (h childHandler) labelled(meta *metav1.PartialObjectMetadata) bool {
	return meta.Labels[contract.LabelGraph] == h.m.graphLabel && meta.Labels[contract.LabelInstanceUID] != ""
}

// owner returns the instance the object belongs to, by its labels or else
// by our records of that very object (same UID).
func (h childHandler) owner(key childKey, meta *metav1.PartialObjectMetadata) (types.NamespacedName, bool) {
	if h.labelled(meta) {
		return h.m.instances.ownerOf(meta.Labels)
	}
	c, ok := h.m.owned.indexed(key)
	if !ok || (c.uid != "" && c.uid != meta.UID) {
		return types.NamespacedName{}, false
	}
	return h.m.instances.instanceOf(c.owner)
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
	for _, key := range h.m.refs.referrers(h.gvk, u) {
		h.m.enqueue(key)
	}
}
