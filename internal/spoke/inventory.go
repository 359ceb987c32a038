package spoke

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

// InventoryEntry is one child of an instance: enough to prune or delete it.
// The Runtime finds children by their contract.LabelInstanceUID in the metadata
// caches of the kinds contract.AnnotationChildKinds lists, so an instance needs no
// write of its own when its set of children changes.
type InventoryEntry struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// Node is the resource id that rendered the child.
	Node string
}

func (e InventoryEntry) gvk() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(e.APIVersion, e.Kind)
}

func (e InventoryEntry) key() childKey {
	return newChildKey(e.gvk(), e.Namespace, e.Name)
}

func (e InventoryEntry) objectName() string {
	return types.NamespacedName{Namespace: e.Namespace, Name: e.Name}.String()
}

func (e InventoryEntry) String() string {
	return fmt.Sprintf("%s %s (node %s)", e.Kind, e.objectName(), e.Node)
}

func entryOf(key childKey, node string) InventoryEntry {
	apiVersion, kind := key.gvk().ToAPIVersionAndKind()
	return InventoryEntry{APIVersion: apiVersion, Kind: kind, Namespace: key.namespace, Name: key.name, Node: node}
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

// inventory returns the instance's children: those the caches of the
// graph's kinds show with its UID, those we applied and the cache has not
// shown yet, and those of the other kinds the instance lists (extraKinds).
// A kind the cluster no longer serves has no children.
func (r reconciler) inventory(inst *unstructured.Unstructured) ([]InventoryEntry, error) {
	m := r.m
	for _, k := range m.kinds {
		if err := m.watches.childKind(k); err != nil && !isNoMatch(err) {
			return nil, err
		}
	}
	if err := r.extraKinds(inst); err != nil {
		return nil, err
	}
	return m.owned.ownedBy(inst.GetUID()), nil
}

// extraKinds finds the instance's children of kinds it lists in
// contract.AnnotationChildKinds that the graph no longer has (a kind a former
// version of the graph rendered). The annotation is user-editable, so those
// kinds are never watched: each is listed once per instance, selecting on
// the graph's and the instance's labels, and what is found is recorded in
// the owned index to be pruned.
func (r reconciler) extraKinds(inst *unstructured.Unstructured) error {
	m := r.m
	uid := inst.GetUID()
	for _, k := range contract.ChildKinds(inst) {
		if m.kinds.has(k) || m.owned.wasListed(uid, k) {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
		ctx, cancel := m.callCtx()
		err := m.cl.GetAPIReader().List(ctx, list,
			client.MatchingLabels{contract.LabelGraph: m.graphLabel, contract.LabelInstanceUID: string(uid)})
		cancel()
		if err != nil && !isNoMatch(err) {
			return fmt.Errorf("listing children of kind %s: %w", k, err)
		}
		for _, o := range list.Items {
			m.recordChild(newChildKey(k, o.Namespace, o.Name), uid, o.Labels[contract.LabelNodeID], o.UID)
		}
		m.owned.markListed(uid, k)
	}
	return nil
}

// toPrune returns the current children this reconcile's outcome no longer
// wants. Nothing is pruned unless every node evaluated and applied without
// error; the children of nodes that could not be resolved yet are kept.
func toPrune(current []InventoryEntry, o *outcome) []InventoryEntry {
	if o.failed != nil {
		return nil
	}
	applied := map[childKey]bool{}
	for _, e := range o.applied {
		applied[e.key()] = true
	}
	var prune []InventoryEntry
	for _, e := range current {
		if !applied[e.key()] && o.resolved(e.Node) {
			prune = append(prune, e)
		}
	}
	return prune
}
