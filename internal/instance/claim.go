package instance

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// This file decides whether an existing object may be written as one of an
// instance's children. Server-side apply with force takes over whatever has
// the rendered name, so the decision is made before the apply, from the
// metadata cache of the child's kind in the child's cluster (synced before
// the first apply of the kind) and from our own records: the owned index
// says which object (by UID) we applied or saw written by us for which
// instance.
//
// What is left open: an object created by someone else between the moment
// the cache last heard of its name and our apply is still taken over. kro
// v0.9.4 has the same window between its GET and its apply. And who wrote
// an object is what managedFields says, whose manager names the writer
// picks: someone who writes with our field manager's name is taken for us.

// ErrNotOwned is wrapped by the error of a child that already exists and
// belongs to someone else: another instance, or nobody we know of (an
// object that only copies our labels among them). The instance goes to
// ERROR naming the object and its owner; the object is neither written nor
// deleted.
var ErrNotOwned = errors.New("object exists and is not ours")

// errChildDeleting is wrapped by the error of a child that is being
// deleted: it is not written until it is gone.
var errChildDeleting = errors.New("being deleted")

// Reasons for a node that waits or fails because of an existing object.
const (
	// ReasonOwnershipConflict is the reason of an instance whose child
	// exists and is not its own.
	ReasonOwnershipConflict = "OwnershipConflict"
	// ReasonResourceDeleting is kro's reason for a child that is being
	// deleted and is waited for.
	ReasonResourceDeleting = "ResourceDeleting"
)

// conflictError names the object in the way and its owner.
type conflictError struct {
	kind, object, owner string
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("%s %s already exists and belongs to %s; it is not taken over: %v", e.kind, e.object, e.owner, ErrNotOwned)
}

func (e *conflictError) Unwrap() error { return ErrNotOwned }

// deletingError names the child being deleted and the node that renders it,
// as kro's ResourceDeleting message does.
type deletingError struct {
	node, object string
}

func (e *deletingError) Error() string {
	return fmt.Sprintf("resource %q for node %q is currently being deleted; waiting for deletion to complete before continuing reconciliation", e.object, e.node)
}

func (e *deletingError) Unwrap() error { return errChildDeleting }

// deleting returns a deletingError if the child, as last seen, is being
// deleted.
func deleting(n *graph.Node, key childKey, observed map[string]any) error {
	if _, found, _ := unstructured.NestedFieldNoCopy(observed, "metadata", "deletionTimestamp"); found {
		return &deletingError{node: n.ID, object: objectName(key)}
	}
	return nil
}

// claim checks that key may be applied in the place's cluster as inst's
// child rendered by n: it does not exist, or our records say it is inst's,
// or it is labelled as inst's and our field manager wrote it, or it has no
// owner label and Options.AdoptUnowned is set. A child being deleted is
// waited for. It reads only the cache.
func (p *place) claim(inst *unstructured.Unstructured, n *graph.Node, key childKey) error {
	e := p.e
	existing := &metav1.PartialObjectMetadata{}
	existing.SetGroupVersionKind(key.gvk())
	ctx, cancel := p.callCtx()
	defer cancel()
	err := p.c.GetCache().Get(ctx, types.NamespacedName{Namespace: key.namespace, Name: key.name}, existing)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s%s: %w", key.gvk().Kind, objectName(key), p.where(), err)
	}
	if existing.DeletionTimestamp != nil {
		return &deletingError{node: n.ID, object: objectName(key)}
	}
	l := existing.Labels
	switch {
	case p.owned.recordsOwn(key, inst.GetUID(), existing.UID):
		return nil
	case e.owner.labelledFor(inst.GetUID(), l) && e.owner.wrote(existing, e.opts.FieldManager):
		return nil // ours; the index learns it from the same event
	case l[contract.LabelInstanceUID] == "" && e.opts.AdoptUnowned:
		return nil
	}
	return &conflictError{kind: key.gvk().Kind, object: objectName(key) + p.where(), owner: e.owner.of(inst, existing, e.opts.FieldManager)}
}

// of describes who an existing object belongs to, from its labels, else
// its field managers: for an object in the way of inst's child.
func (ow owner) of(inst *unstructured.Unstructured, o *metav1.PartialObjectMetadata, fieldManager string) string {
	l := o.Labels
	var managers []string
	for _, f := range o.ManagedFields {
		if f.Manager != "" {
			managers = append(managers, f.Manager)
		}
	}
	written := ""
	if len(managers) > 0 {
		written = fmt.Sprintf(" (written by %v)", managers)
	}
	uid := l[contract.LabelInstanceUID]
	switch {
	case ow.labelledFor(inst.GetUID(), l):
		return fmt.Sprintf("nobody we know of: it copies this instance's owner labels, and field manager %q did not write it%s", fieldManager, written)
	case uid != "":
		name := types.NamespacedName{Namespace: l[contract.LabelInstanceNamespace], Name: l[contract.LabelInstanceName]}
		return fmt.Sprintf("instance %s (uid %s) of graph %q%s", name, uid, l[contract.LabelGraph], ow.describeExtra(l))
	}
	return "no fleetgraph instance" + written
}

// describeExtra names the driver's labels as an object carries them, when
// they are not ours (the hub that wrote it, for hub graphs).
func (ow owner) describeExtra(l map[string]string) string {
	out := ""
	for k, v := range ow.extra {
		if l[k] != v {
			out += fmt.Sprintf(", %s %q", k, l[k])
		}
	}
	return out
}

func objectName(key childKey) string {
	return types.NamespacedName{Namespace: key.namespace, Name: key.name}.String()
}
