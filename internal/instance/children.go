package instance

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

var _ toolscache.ResourceEventHandler = childHandler{}

// childHandler turns events on an engine's children in one cluster
// (metadata only) into requeues of their owner, unless the event merely
// echoes our own apply, and keeps the owned index. A child is ours if our
// records say so (a child whose labels somebody stripped is still ours,
// and the change is drift to put back), or if it carries our graph's
// labels and our field manager wrote it. An object that carries our labels
// and that we did not write is not ours: it is reported (an event on it)
// and left alone.
type childHandler struct {
	p   *place
	gvk schema.GroupVersionKind
}

func (h childHandler) OnAdd(obj any, _ bool) { h.observed(nil, obj) }

func (h childHandler) OnUpdate(oldObj, newObj any) { h.observed(oldObj, newObj) }

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
	h.p.memory.deleted(key)
	h.p.dropChild(key)
	h.p.e.enqueue(owner)
}

func (h childHandler) observed(oldObj, obj any) {
	meta, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	e := h.p.e
	key := h.key(meta)
	if e.owner.labelled(meta.Labels) {
		uid := types.UID(meta.Labels[contract.LabelInstanceUID])
		switch {
		case e.owner.wrote(meta, e.opts.FieldManager) || h.p.owned.recordsOwn(key, uid, meta.UID):
			h.p.recordChild(key, uid, meta.Labels[contract.LabelNodeID], meta.UID)
		case !h.wasLabelled(oldObj):
			h.foreign(meta)
		}
	}
	owner, ok := h.owner(key, meta)
	if ok && h.p.memory.observed(key, meta.ResourceVersion) {
		e.enqueue(owner)
	}
}

// wasLabelled reports whether the object, before an update, already
// carried our labels (so it was reported already, if it had to be).
func (h childHandler) wasLabelled(oldObj any) bool {
	meta, ok := oldObj.(*metav1.PartialObjectMetadata)
	return ok && h.p.e.owner.labelled(meta.Labels)
}

func (h childHandler) key(meta *metav1.PartialObjectMetadata) childKey {
	return newChildKey(h.gvk, meta.Namespace, meta.Name)
}

// owner returns the instance the object belongs to, by our records of that
// very object (same UID), or by its labels when it is ours.
func (h childHandler) owner(key childKey, meta *metav1.PartialObjectMetadata) (types.NamespacedName, bool) {
	c, ok := h.p.owned.indexed(key)
	if !ok || (c.uid != "" && c.uid != meta.UID) {
		return types.NamespacedName{}, false
	}
	if h.p.e.owner.labelled(meta.Labels) && meta.Labels[contract.LabelInstanceUID] == string(c.owner) {
		return h.p.e.instances.ownerOf(meta.Labels)
	}
	return h.p.e.instances.instanceOf(c.owner)
}

// ReasonForeignObject is the reason of the Warning event on an object that
// carries the owner labels of one of an engine's instances and that its
// field manager did not write: it is left alone.
const ReasonForeignObject = "NotFleetgraphsObject"

// foreign reports an object that carries our labels and that we did not
// write: an event on the object, and the log. Nothing else is done with
// it.
func (h childHandler) foreign(meta *metav1.PartialObjectMetadata) {
	e := h.p.e
	obj := meta.DeepCopy()
	obj.SetGroupVersionKind(h.gvk)
	l := meta.Labels
	e.log.V(1).Info("an object that copies the owner labels of a child is left alone",
		"cluster", h.p.c.name, "kind", h.gvk.Kind, "object", keyOf(meta).String(), "instanceUID", l[contract.LabelInstanceUID],
		"reason", fmt.Sprintf("not written by field manager %q", e.opts.FieldManager))
	h.p.c.recorder().Eventf(obj, nil, corev1.EventTypeWarning, ReasonForeignObject, "Ignore",
		"carries the owner labels of instance %s/%s (uid %s) of graph %q, but field manager %q did not write it: fleetgraph never writes, prunes or deletes it",
		l[contract.LabelInstanceNamespace], l[contract.LabelInstanceName], l[contract.LabelInstanceUID], l[contract.LabelGraph], e.opts.FieldManager)
}

// recordChild notes in the owned index that key, the object uid, belongs
// to owner, rendered by node. A child of an owner the engine does not know
// is suspected of being an orphan (orphans.go).
func (p *place) recordChild(key childKey, owner types.UID, node string, uid types.UID) {
	if owner == "" {
		return
	}
	p.owned.record(key, owner, node, uid)
	if _, live := p.e.instances.instanceOf(owner); !live {
		p.e.orphans.suspect(owner)
	}
}

// dropChild forgets a child that is gone; an orphan collection waiting
// for it may go on.
func (p *place) dropChild(key childKey) {
	if owner, ok := p.owned.drop(key); ok {
		p.e.orphans.childGone(owner)
	}
}
