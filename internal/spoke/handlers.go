package spoke

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

var _ toolscache.ResourceEventHandler = instanceHandler{}

// instanceHandler enqueues instances. Updates that only touch status,
// finalizers or our child kinds are our own writes and are ignored. Every
// event also moves the registration's tally (counts.go) and tells the
// engine what the watch delivered (instances' UIDs, our own writes coming
// back, instances gone).
type instanceHandler struct {
	m     *member
	tally *instanceTally
}

func (h instanceHandler) OnAdd(obj any, _ bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		h.tally.added(u)
		h.observe(u)
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
	h.observe(n)
	h.m.watches.weigh(n)
	if h.m.heads.arrived(keyOf(n)) || metaChanged(o, n) && !h.m.heads.shown(n) {
		h.m.enqueue(keyOf(n))
	}
}

func (h instanceHandler) OnDelete(obj any) {
	if u, ok := tombstone(obj).(*unstructured.Unstructured); ok {
		h.tally.deleted(u)
		h.m.engine.Instances().Gone(u)
		h.m.enqueue(keyOf(u))
	}
}

// observe tells the engine of an instance the watch delivered. An event
// that arrives while a write of that instance is in flight is noted
// (Hold), so that the write's answer, when it is that same version coming
// back first through the watch, is not remembered as still to come: it
// never would, and its copy would be kept for as long as the instance
// lives; a foreign event noted so keeps our copy, which is newer. The
// spoke's own rules decide what requeues (no requeue is held).
// Any other event that is not the echo of one of our writes drops our
// copy: the cache may have skipped our version (a relist) or moved past
// it.
func (h instanceHandler) observe(u *unstructured.Unstructured) {
	h.m.engine.Instances().Saw(u)
	if w := h.m.engine.Writes(); !w.Echo(u) && !w.Hold(u, nil) {
		w.Forget(keyOf(u))
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
