package instance

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// owner is who an engine's children belong to: its graph, and the labels
// its driver adds to every child (hub graphs name the hub that wrote
// them). It is the one place their ownership labels are written, matched
// and selected by.
//
// Labels say whose an object claims to be, and anyone who may create an
// object may copy them. So labels alone never make an object ours: the
// engine takes an existing object for one of its children only when its
// own records say so (it applied that very object, by UID) or when our
// field manager wrote it (wrote). An object that merely carries our labels
// is left alone: never written, pruned, deleted or collected.
type owner struct {
	// graph is the value of contract.LabelGraph.
	graph string
	// extra are the driver's labels, every one required.
	extra map[string]string
}

func newOwner(g *graph.Graph, extra map[string]string) owner {
	return owner{graph: contract.LabelValue(g.Name), extra: maps.Clone(extra)}
}

// labels returns a child's labels l with ours added.
func (ow owner) labels(inst *unstructured.Unstructured, n *graph.Node, l map[string]string) map[string]string {
	out := maps.Clone(l)
	if out == nil {
		out = map[string]string{}
	}
	out[contract.LabelManagedBy] = contract.ManagedBy
	out[contract.LabelGraph] = ow.graph
	out[contract.LabelNodeID] = contract.LabelValue(n.ID)
	out[contract.LabelInstanceUID] = string(inst.GetUID())
	out[contract.LabelInstanceName] = contract.LabelValue(inst.GetName())
	out[contract.LabelInstanceNamespace] = inst.GetNamespace()
	maps.Copy(out, ow.extra)
	return out
}

// labelled reports whether l names an instance of this graph (and the
// driver's labels match): an object that says it is one of our children.
func (ow owner) labelled(l map[string]string) bool {
	if l[contract.LabelGraph] != ow.graph || l[contract.LabelInstanceUID] == "" {
		return false
	}
	for k, v := range ow.extra {
		if l[k] != v {
			return false
		}
	}
	return true
}

// labelledFor reports whether l names the instance uid of this graph.
func (ow owner) labelledFor(uid types.UID, l map[string]string) bool {
	return ow.labelled(l) && l[contract.LabelInstanceUID] == string(uid)
}

// selector selects the objects labelled as this graph's children.
func (ow owner) selector() client.MatchingLabels {
	sel := client.MatchingLabels{contract.LabelGraph: ow.graph}
	maps.Copy(sel, ow.extra)
	return sel
}

// wrote reports whether fieldManager wrote o: it manages some of its
// fields (managedFields, whose managers' names the trimmed caches keep).
func (ow owner) wrote(o metav1.Object, fieldManager string) bool {
	return slices.ContainsFunc(o.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool {
		return f.Manager == fieldManager
	})
}

// ChildrenSelector selects the children of the instance uid, in any
// cluster: the labels the engine writes on them. Objects it selects claim
// to be children; only those the engine wrote are (owner.wrote).
func (e *Engine) ChildrenSelector(uid types.UID) client.MatchingLabels {
	return e.owner.childrenOf(uid)
}

// selectorString is the selector as "k=v,..." sorted, for messages.
func (ow owner) selectorString(uid types.UID) string {
	sel := ow.childrenOf(uid)
	keys := slices.Sorted(maps.Keys(sel))
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ","
		}
		out += k + "=" + sel[k]
	}
	return out
}
