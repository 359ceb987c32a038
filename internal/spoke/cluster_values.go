package spoke

import (
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// bindCluster puts the cluster variable in vals for a graph that reads it:
// the member's cluster name ("" in single-cluster mode, the name the
// manager engages its own cluster under) and, for a graph that reads
// labels, the labels Options.ClusterLabels gives it now. A graph that
// does not read cluster costs nothing here.
func (m *member) bindCluster(vals graph.Values) {
	use := m.g.UsesCluster()
	if use == 0 {
		return
	}
	var labels map[string]string
	if use&graph.ClusterLabels != 0 && m.c.opts.ClusterLabels != nil {
		labels = m.c.opts.ClusterLabels(m.cluster)
	}
	vals[graph.VarCluster] = graph.ClusterValue(string(m.cluster), labels)
}
