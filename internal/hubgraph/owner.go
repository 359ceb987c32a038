package hubgraph

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// owner is who one served graph's children belong to: the hub that wrote
// them and the graph. It is the one place their ownership labels are
// written, matched and selected by.
type owner struct {
	// hub is the value of LabelHub. It is set once by server.run, before
	// the controller starts, and only read afterwards: it needs no lock.
	hub string
	// graph is the value of contract.LabelGraph.
	graph string
}

// labels returns a child's labels l with ours added: the spoke runtime's,
// naming the hub instance, and LabelHub.
func (ow *owner) labels(inst *unstructured.Unstructured, n *graph.Node, l map[string]string) map[string]string {
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
	out[LabelHub] = ow.hub
	return out
}

// ours reports whether labels name inst of this graph, written by this
// hub.
func (ow *owner) ours(inst *unstructured.Unstructured, l map[string]string) bool {
	return ow.graphs(l) && l[contract.LabelInstanceUID] == string(inst.GetUID())
}

// graphs reports whether labels name this graph, written by this hub.
func (ow *owner) graphs(l map[string]string) bool {
	return l[LabelHub] == ow.hub && l[contract.LabelGraph] == ow.graph
}

// selector selects inst's children (of one node when nodeID is set).
func (ow *owner) selector(inst *unstructured.Unstructured, nodeID string) client.MatchingLabels {
	sel := client.MatchingLabels{LabelHub: ow.hub, contract.LabelGraph: ow.graph, contract.LabelInstanceUID: string(inst.GetUID())}
	if nodeID != "" {
		sel[contract.LabelNodeID] = contract.LabelValue(nodeID)
	}
	return sel
}
