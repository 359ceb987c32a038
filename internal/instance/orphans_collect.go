package instance

import (
	"context"
	"errors"
	"fmt"
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

// instancesListed reports whether the driver's instance watch runs with
// its initial list: before that, an instance missing from it proves
// nothing.
func (o *orphanage) instancesListed() bool {
	return o.e.cfg.InstancesListed == nil || o.e.cfg.InstancesListed()
}

// ownerGone asks the instances' cluster whether the instance with UID
// owner is gone, by the name and namespace its children's labels give,
// which it returns.
func (o *orphanage) ownerGone(owner types.UID, children []Entry) (types.NamespacedName, bool, error) {
	e := o.e
	var labels map[string]string
	for _, en := range children {
		p := e.places.named(en.Cluster)
		if p == nil {
			continue
		}
		meta, err := p.childMeta(en)
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
	ctx, cancel := e.callCtx()
	defer cancel()
	if key.Name != "" {
		inst := &metav1.PartialObjectMetadata{}
		inst.SetGroupVersionKind(e.g.Instance.GVK)
		err := e.home.GetAPIReader().Get(ctx, key, inst)
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
	e := o.e
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(e.g.Instance.GVK.GroupVersion().WithKind(e.g.Instance.GVK.Kind + "List"))
	opts := []client.ListOption{client.Limit(500)}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	for {
		if err := e.home.GetAPIReader().List(ctx, list, opts...); err != nil {
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

// collectWaves deletes the children of a gone instance wave by wave,
// across clusters. It reports waiting while a wave still has a child
// present.
func (o *orphanage) collectWaves(owner types.UID, children []Entry, s *suspect) (waiting bool, err error) {
	for _, wave := range deletionWaves(o.e.g, children) {
		present := false
		for _, en := range wave {
			p, err := o.collectChild(owner, en, s)
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
func (o *orphanage) collectChild(owner types.UID, en Entry, s *suspect) (present bool, err error) {
	e := o.e
	p := e.places.named(en.Cluster)
	if p == nil {
		return false, nil // the cluster was forgotten: nothing known of it
	}
	c, ok := p.owned.indexed(en.key())
	if !ok || c.owner != owner {
		return false, nil
	}
	meta, err := p.childMeta(en)
	if err != nil {
		return false, err
	}
	if meta == nil {
		p.dropChild(en.key())
		return false, nil
	}
	if why := o.notCollectable(owner, c, meta); why != "" {
		e.log.V(1).Info("child of a gone instance left alone", "child", en.describe(e.home.name), "reason", why)
		p.dropChild(en.key())
		return false, nil
	}
	if meta.DeletionTimestamp != nil {
		return true, nil
	}
	ctx, cancel := p.callCtx()
	defer cancel()
	err = p.c.GetClient().Delete(ctx, meta, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &meta.UID, ResourceVersion: &meta.ResourceVersion})
	switch {
	case apierrors.IsNotFound(err):
		p.dropChild(en.key())
		return false, nil
	case apierrors.IsConflict(err):
		return true, nil // changed since the cache saw it: looked at again
	case err != nil:
		return false, fmt.Errorf("deleting %s%s: %w", en, p.where(), err)
	}
	orphansCollected.WithLabelValues(e.g.Name, p.c.name, en.Kind).Inc()
	e.log.Info("deleted a child whose instance no longer exists", "child", en.describe(e.home.name),
		"instance", s.instance.String(), "instanceUID", owner)
	s.deleted = append(s.deleted, en.short(e.home.name))
	return true, nil
}

// short names a child for an event: "Kind ns/name", with its cluster
// when it is not the instance's own, home.
func (en Entry) short(home string) string {
	out := en.Kind + " " + en.objectName()
	if en.Cluster != home {
		out += " in " + displayName(en.Cluster)
	}
	return out
}

// notCollectable says why a child of a gone instance must not be deleted,
// or "" if it may.
func (o *orphanage) notCollectable(owner types.UID, c ownedChild, meta *metav1.PartialObjectMetadata) string {
	e := o.e
	switch {
	case c.uid != "" && meta.UID != c.uid:
		return "another object has its name now"
	case !e.owner.labelledFor(owner, meta.Labels):
		return "not labelled as the instance's child"
	case meta.Annotations[contract.AnnotationReleased] == "true":
		return "left in place when its instance was released"
	case !e.owner.wrote(meta, e.opts.FieldManager):
		return fmt.Sprintf("not written by field manager %q", e.opts.FieldManager)
	}
	return ""
}

// reportCollected records an event on the gone instance naming the
// children deleted because it is gone: one event per instance, not per
// child, so that collecting a mass deletion writes few events.
func (o *orphanage) reportCollected(owner types.UID, s *suspect) {
	e := o.e
	if len(s.deleted) == 0 {
		return
	}
	names := strings.Join(s.deleted[:min(len(s.deleted), orphanEventNames)], ", ")
	if more := len(s.deleted) - orphanEventNames; more > 0 {
		names += fmt.Sprintf(" and %d more", more)
	}
	inst := &metav1.PartialObjectMetadata{}
	inst.SetGroupVersionKind(e.g.Instance.GVK)
	inst.SetNamespace(s.instance.Namespace)
	inst.SetName(s.instance.Name)
	inst.SetUID(owner)
	e.home.recorder().Eventf(inst, nil, corev1.EventTypeNormal, ReasonOrphansDeleted, "Delete",
		"deleted %d children left behind (%s): the instance (uid %s) of graph %q no longer exists",
		len(s.deleted), names, owner, e.g.Name)
	s.deleted = nil
}

// ReasonOrphansDeleted is the reason of the event on a gone instance whose
// children were collected.
const ReasonOrphansDeleted = "OrphansDeleted"

// FindOrphans looks in c for children of instances gone while nothing
// watched there. The child watches start with the first reconcile that
// needs them, which a cluster without instances never has: there, after a
// restart, children of instances deleted meanwhile would go unseen. So
// each of the graph's kinds is asked once, for one object labelled as the
// graph's, and watched if it has one (its children are then suspected as
// the watch records them). A driver calls it where it knows children may
// be and no reconcile will look: the spoke runtime on a cluster that holds
// none of the graph's instances, hub graphs in the clusters their literal
// targets name. It returns at once.
func (e *Engine) FindOrphans(c *Cluster) {
	o := e.orphans
	if o.grace < 0 || (e.cfg.Released != nil && e.cfg.Released()) {
		return
	}
	o.mu.Lock()
	if o.stopped {
		o.mu.Unlock()
		return
	}
	o.passes.Add(1)
	o.mu.Unlock()
	p := e.places.of(e, c)
	go func() {
		defer o.passes.Done()
		for _, k := range e.kinds {
			if p.hasLabelledChild(k) {
				if err := p.watches.childKind(k); err != nil && !errors.Is(err, ErrWatchStarting) {
					e.log.V(1).Info("not watching a child kind for orphans", "cluster", c.name, "kind", k.String(), "reason", err.Error())
				}
			}
		}
	}()
}

// hasLabelledChild asks the cluster for one object of kind k labelled as
// one of the graph's children.
func (p *place) hasLabelledChild(k schema.GroupVersionKind) bool {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
	ctx, cancel := p.callCtx()
	defer cancel()
	err := p.c.GetAPIReader().List(ctx, list, p.e.owner.selector(), client.Limit(1))
	return err == nil && len(list.Items) > 0
}
