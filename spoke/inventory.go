package spoke

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// InventoryEntry is one child recorded in AnnotationInventory: enough to
// find it again (to prune or delete it) after the graph changed or the
// process restarted.
type InventoryEntry struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Node is the resource id that rendered the child.
	Node string `json:"node"`
}

func (e InventoryEntry) gvk() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(e.APIVersion, e.Kind)
}

func (e InventoryEntry) key() childKey {
	return childKey{gvk: e.gvk(), namespace: e.Namespace, name: e.Name}
}

func (e InventoryEntry) objectName() string {
	return types.NamespacedName{Namespace: e.Namespace, Name: e.Name}.String()
}

func (e InventoryEntry) String() string {
	return fmt.Sprintf("%s %s (node %s)", e.Kind, e.objectName(), e.Node)
}

// readInventory parses the instance's inventory; a missing or unreadable
// annotation is an empty inventory.
func readInventory(inst *unstructured.Unstructured) []InventoryEntry {
	raw := inst.GetAnnotations()[AnnotationInventory]
	if raw == "" {
		return nil
	}
	var out []InventoryEntry
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil
	}
	return out
}

// encodeInventory sorts and deduplicates entries and returns their JSON.
func encodeInventory(entries []InventoryEntry) string {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b InventoryEntry) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.APIVersion, b.APIVersion),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	entries = slices.Compact(entries)
	if len(entries) == 0 {
		return ""
	}
	b, _ := json.Marshal(entries)
	return string(b)
}

// planInventory splits the old inventory into what to keep and what to prune
// given this reconcile's outcome. Nothing is pruned unless every node
// evaluated without error; the children of nodes that could not be resolved
// yet are kept.
func planInventory(old []InventoryEntry, o *outcome) (keep, prune []InventoryEntry) {
	applied := map[childKey]bool{}
	for _, e := range o.applied {
		applied[e.key()] = true
	}
	keep = slices.Clone(o.applied)
	for _, e := range old {
		switch {
		case applied[e.key()]:
		case o.failed != nil || !o.resolved(e.Node):
			keep = append(keep, e)
		default:
			prune = append(prune, e)
		}
	}
	return keep, prune
}

// plannedInventory lists the children inst will have whose identity is
// known from the instance alone: included (or undecided) nodes, each
// iteration, named without reading any other resource. Listing a child that
// is never created is harmless (pruning it finds nothing); one that cannot be
// named yet is recorded after it is applied.
func (m *member) plannedInventory(inst *unstructured.Unstructured) []InventoryEntry {
	vals := graph.Values{"schema": inst.Object}
	var out []InventoryEntry
	for _, n := range m.g.Nodes {
		if n.External {
			continue
		}
		if included, err := n.Included(vals); err == nil && !included {
			continue
		}
		iterations, err := n.Iterations(vals)
		if err != nil {
			continue
		}
		for _, it := range iterations {
			if e, ok := m.plannedEntry(inst, n, vals, it); ok {
				out = append(out, e)
			}
		}
	}
	return out
}

func (m *member) plannedEntry(inst *unstructured.Unstructured, n *graph.Node, vals graph.Values, it map[string]any) (InventoryEntry, bool) {
	ns, name, err := n.Identity(vals, it)
	if err != nil || name == "" {
		return InventoryEntry{}, false
	}
	namespaced, err := m.namespaced(n.GVK)
	if err != nil {
		return InventoryEntry{}, false
	}
	switch {
	case !namespaced:
		ns = ""
	case ns == "":
		ns = defaultNamespace(inst)
	}
	return InventoryEntry{APIVersion: n.GVK.GroupVersion().String(), Kind: n.GVK.Kind, Namespace: ns, Name: name, Node: n.ID}, true
}
