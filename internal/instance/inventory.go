package instance

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// Entry is one child of an instance: enough to prune or delete it. The
// engine finds children by their contract.LabelInstanceUID in the metadata
// caches of the kinds contract.AnnotationChildKinds lists, in every
// cluster the instance may have children in, so an instance needs no
// write of its own when its set of children changes.
type Entry struct {
	// Cluster is the name of the cluster the child lives in.
	Cluster    string
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// Node is the resource id that rendered the child.
	Node string
}

func (e Entry) gvk() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(e.APIVersion, e.Kind)
}

func (e Entry) key() childKey {
	return newChildKey(e.gvk(), e.Namespace, e.Name)
}

func (e Entry) objectName() string {
	return types.NamespacedName{Namespace: e.Namespace, Name: e.Name}.String()
}

func (e Entry) String() string {
	return fmt.Sprintf("%s %s (node %s)", e.Kind, e.objectName(), e.Node)
}

func entryOf(cluster string, key childKey, node string) Entry {
	apiVersion, kind := key.gvk().ToAPIVersionAndKind()
	return Entry{Cluster: cluster, APIVersion: apiVersion, Kind: kind, Namespace: key.namespace, Name: key.name, Node: node}
}

// kindSet is a sorted list of kinds without duplicates, as
// contract.GraphKinds returns them.
type kindSet []schema.GroupVersionKind

// has reports whether k is in the set.
func (s kindSet) has(k schema.GroupVersionKind) bool {
	_, found := slices.BinarySearchFunc(s, k, contract.CompareKinds)
	return found
}

// missing returns the kinds of the set that have (sorted, as
// contract.ChildKinds returns them) lacks.
func (s kindSet) missing(have []schema.GroupVersionKind) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, k := range s {
		if _, found := slices.BinarySearchFunc(have, k, contract.CompareKinds); !found {
			out = append(out, k)
		}
	}
	return out
}

// inventory returns the instance's children in the place's cluster: those
// the caches of the graph's kinds show with its UID, those we applied and
// the cache has not shown yet, and those of the other kinds the instance
// lists (extraKinds). A kind the cluster no longer serves has no children.
func (p *place) inventory(inst *unstructured.Unstructured) ([]Entry, error) {
	for _, k := range p.e.kinds {
		if err := p.watches.childKind(k); err != nil && !isNoMatch(err) {
			return nil, err
		}
	}
	if err := p.extraKinds(inst); err != nil {
		return nil, err
	}
	return p.owned.ownedBy(inst.GetUID(), p.c.name), nil
}

// extraKinds finds the instance's children of kinds it lists in
// contract.AnnotationChildKinds that the graph no longer has (a kind a
// former version of the graph rendered). The annotation is user-editable,
// so those kinds are never watched: each is listed once per instance,
// selecting on the graph's and the instance's labels, and what is found
// and was written by us is recorded in the owned index to be pruned.
func (p *place) extraKinds(inst *unstructured.Unstructured) error {
	uid := inst.GetUID()
	for _, k := range contract.ChildKinds(inst) {
		if p.e.kinds.has(k) || p.owned.wasListed(uid, k) {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
		ctx, cancel := p.callCtx()
		err := p.c.GetAPIReader().List(ctx, list, p.e.owner.childrenOf(uid))
		cancel()
		if err != nil && !isNoMatch(err) {
			return fmt.Errorf("listing children of kind %s%s: %w", k, p.where(), err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			if p.e.owner.wrote(o, p.e.opts.FieldManager) {
				p.recordChild(newChildKey(k, o.Namespace, o.Name), uid, o.Labels[contract.LabelNodeID], o.UID)
			}
		}
		p.owned.markListed(uid, k)
	}
	return nil
}

// toPrune returns the current children this reconcile's outcome no longer
// wants. Nothing is pruned unless every node evaluated and applied without
// error; the children of nodes that could not be resolved yet are kept,
// and so are those in a cluster the reconcile could not reach.
func toPrune(current []Entry, o *Outcome) []Entry {
	if o.failed != nil {
		return nil
	}
	type at struct {
		cluster string
		key     childKey
	}
	applied := map[at]bool{}
	for _, e := range o.applied {
		applied[at{e.Cluster, e.key()}] = true
	}
	var prune []Entry
	for _, e := range current {
		if !applied[at{e.Cluster, e.key()}] && o.resolved(e.Node) && o.down.err(e.Cluster) == nil {
			prune = append(prune, e)
		}
	}
	return prune
}

// childrenOf selects the children of the instance uid.
func (ow owner) childrenOf(uid types.UID) client.MatchingLabels {
	sel := ow.selector()
	sel[contract.LabelInstanceUID] = string(uid)
	return sel
}
