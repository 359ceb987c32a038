package spoke

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// This file is the orphanage's look at a suspect: is its instance gone
// (confirmed by a live read), and are its children ours to delete? See
// orphans.go for when a suspect is looked at and why deleting is careful.

// instancesListed reports whether the instance watch runs with its initial
// list: before that, an instance missing from it proves nothing.
func (o *orphanage) instancesListed() bool {
	select {
	case <-o.m.ready:
	default:
		return false
	}
	return !o.m.crd.busy()
}

// ownerGone asks the API server whether the instance with UID owner is
// gone, by the name and namespace its children's labels give, which it
// returns.
func (o *orphanage) ownerGone(owner types.UID, children []InventoryEntry) (types.NamespacedName, bool, error) {
	m := o.m
	var labels map[string]string
	for _, e := range children {
		meta, err := m.childMeta(e)
		if err != nil {
			return types.NamespacedName{}, false, err
		}
		if meta != nil && meta.Labels[contract.LabelInstanceUID] == string(owner) {
			labels = meta.Labels
			break
		}
	}
	if labels == nil {
		return types.NamespacedName{}, false, nil // no child says where its instance is: leave them
	}
	key := types.NamespacedName{Namespace: labels[contract.LabelInstanceNamespace], Name: labels[contract.LabelInstanceName]}
	ctx, cancel := m.callCtx()
	defer cancel()
	if key.Name != "" {
		inst := &metav1.PartialObjectMetadata{}
		inst.SetGroupVersionKind(m.g.Instance.GVK)
		err := m.cl.GetAPIReader().Get(ctx, key, inst)
		switch {
		case err == nil && inst.UID == owner:
			return key, false, nil
		case err != nil && !apierrors.IsNotFound(err):
			return key, false, fmt.Errorf("reading instance %s: %w", key, err)
		case len(key.Name) < maxNameLabel:
			return key, true, nil // the label holds the whole name: nothing else can be it
		}
	}
	gone, err := o.noInstanceWithUID(ctx, key.Namespace, owner)
	return key, gone, err
}

// maxNameLabel is the length of a name label that may have been shortened
// by contract.LabelValue.
const maxNameLabel = 63

// noInstanceWithUID lists the namespace's instances (metadata, by pages)
// and reports whether none has the UID: for an instance whose name label
// was shortened, so that a GET by it proves nothing.
func (o *orphanage) noInstanceWithUID(ctx context.Context, ns string, owner types.UID) (bool, error) {
	m := o.m
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(m.g.Instance.GVK.GroupVersion().WithKind(m.g.Instance.GVK.Kind + "List"))
	opts := []client.ListOption{client.Limit(500)}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	for {
		if err := m.cl.GetAPIReader().List(ctx, list, opts...); err != nil {
			return false, fmt.Errorf("listing instances in %q: %w", ns, err)
		}
		for _, item := range list.Items {
			if item.UID == owner {
				return false, nil
			}
		}
		if list.Continue == "" {
			return true, nil
		}
		opts = append(opts[:0], client.Limit(500), client.Continue(list.Continue))
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
	}
}

// collectWaves deletes the children of a gone instance wave by wave. It
// reports waiting while a wave still has a child present.
func (o *orphanage) collectWaves(owner types.UID, children []InventoryEntry, s *suspect) (waiting bool, err error) {
	for _, wave := range deletionWaves(o.m.g, children) {
		present := false
		for _, e := range wave {
			p, err := o.collectChild(owner, e, s)
			if err != nil {
				return false, err
			}
			present = present || p
		}
		if present {
			return true, nil
		}
	}
	return false, nil
}

// collectChild deletes one child of a gone instance if it is ours, and
// reports whether it is still present (being deleted).
func (o *orphanage) collectChild(owner types.UID, e InventoryEntry, s *suspect) (present bool, err error) {
	m := o.m
	c, ok := m.owned.indexed(e.key())
	if !ok || c.owner != owner {
		return false, nil
	}
	meta, err := m.childMeta(e)
	if err != nil {
		return false, err
	}
	if meta == nil {
		m.dropChild(e.key())
		return false, nil
	}
	if why := o.notCollectable(owner, c, meta); why != "" {
		m.log.V(1).Info("child of a gone instance left alone", "child", e.String(), "reason", why)
		m.dropChild(e.key())
		return false, nil
	}
	if meta.DeletionTimestamp != nil {
		return true, nil
	}
	ctx, cancel := m.callCtx()
	defer cancel()
	err = m.cl.GetClient().Delete(ctx, meta, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &meta.UID, ResourceVersion: &meta.ResourceVersion})
	switch {
	case apierrors.IsNotFound(err):
		m.dropChild(e.key())
		return false, nil
	case apierrors.IsConflict(err):
		return true, nil // changed since the cache saw it: looked at again
	case err != nil:
		return false, fmt.Errorf("deleting %s: %w", e, err)
	}
	orphansCollected.WithLabelValues(m.g.Name, m.cluster.String(), e.Kind).Inc()
	m.log.Info("deleted a child whose instance no longer exists", "child", e.String(),
		"instance", s.instance.String(), "instanceUID", owner)
	s.deleted = append(s.deleted, e.Kind+" "+e.objectName())
	return true, nil
}

// notCollectable says why a child of a gone instance must not be deleted,
// or "" if it may.
func (o *orphanage) notCollectable(owner types.UID, c ownedChild, meta *metav1.PartialObjectMetadata) string {
	m := o.m
	l := meta.Labels
	switch {
	case c.uid != "" && meta.UID != c.uid:
		return "another object has its name now"
	case l[contract.LabelGraph] != m.graphLabel || l[contract.LabelInstanceUID] != string(owner):
		return "not labelled as the instance's child"
	case meta.Annotations[contract.AnnotationReleased] == "true":
		return "left in place when its instance was released"
	case !slices.ContainsFunc(meta.ManagedFields, func(f metav1.ManagedFieldsEntry) bool {
		return f.Manager == m.c.opts.FieldManager
	}):
		return fmt.Sprintf("not written by field manager %q", m.c.opts.FieldManager)
	}
	return ""
}

// reportCollected records an event on the gone instance naming the
// children deleted because it is gone: one event per instance, not per
// child, so that collecting a mass deletion writes few events.
func (o *orphanage) reportCollected(owner types.UID, s *suspect) {
	m := o.m
	if len(s.deleted) == 0 {
		return
	}
	names := strings.Join(s.deleted[:min(len(s.deleted), orphanEventNames)], ", ")
	if more := len(s.deleted) - orphanEventNames; more > 0 {
		names += fmt.Sprintf(" and %d more", more)
	}
	inst := &metav1.PartialObjectMetadata{}
	inst.SetGroupVersionKind(m.g.Instance.GVK)
	inst.SetNamespace(s.instance.Namespace)
	inst.SetName(s.instance.Name)
	inst.SetUID(owner)
	m.recorder.Eventf(inst, nil, corev1.EventTypeNormal, reasonOrphansDeleted, "Delete",
		"deleted %d children left behind (%s): the instance (uid %s) of graph %q no longer exists",
		len(s.deleted), names, owner, m.g.Name)
	s.deleted = nil
}

// reasonOrphansDeleted is the reason of the event on a gone instance whose
// children were collected.
const reasonOrphansDeleted = "OrphansDeleted"

// start runs once the instance watch has its initial list. The child
// watches start with the first reconcile that needs them, which a cluster
// without instances never has: there, after a restart, children of
// instances deleted meanwhile would go unseen. So on such a cluster each
// of the graph's kinds is asked once, for one object with the graph's
// label, and watched if it has one.
func (o *orphanage) start() {
	m := o.m
	if o.grace < 0 || m.c.v.Removal == RemovalRelease || m.count().Total > 0 {
		return
	}
	o.mu.Lock()
	if o.stopped {
		o.mu.Unlock()
		return
	}
	o.passes.Add(1)
	o.mu.Unlock()
	go func() {
		defer o.passes.Done()
		for _, k := range m.kinds {
			if o.hasLabelledChild(k) {
				if err := m.watches.childKind(k); err != nil && !errors.Is(err, errWatchStarting) {
					m.log.V(1).Info("not watching a child kind for orphans", "kind", k.String(), "reason", err.Error())
				}
			}
		}
	}()
}

// hasLabelledChild asks the API server for one object of kind k labelled
// as one of the graph's children.
func (o *orphanage) hasLabelledChild(k schema.GroupVersionKind) bool {
	m := o.m
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
	ctx, cancel := m.callCtx()
	defer cancel()
	err := m.cl.GetAPIReader().List(ctx, list, client.MatchingLabels{contract.LabelGraph: m.graphLabel}, client.Limit(1))
	return err == nil && len(list.Items) > 0
}
