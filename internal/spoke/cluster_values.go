package spoke

import (
	"maps"
	"time"

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

// followClusterLabels asks for the cluster's labels every
// Options.ClusterLabelsPoll, for a graph that reads them, and reconciles
// every instance again when they changed: a relabelled cluster's children
// follow within a poll and a reconcile. Providers say nothing when labels
// change, and asking is a map read, so the member asks.
func (m *member) followClusterLabels() {
	poll, labelsOf := m.c.opts.ClusterLabelsPoll, m.c.opts.ClusterLabels
	if m.g.UsesCluster()&graph.ClusterLabels == 0 || labelsOf == nil || poll < 0 {
		return
	}
	last := labelsOf(m.cluster)
	go func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-m.ctx.Done():
				return
			case <-t.C:
			}
			now := labelsOf(m.cluster)
			if maps.Equal(now, last) {
				continue
			}
			last = now
			keys := m.states.keys()
			m.log.V(1).Info("cluster labels changed: reconciling every instance again", "instances", len(keys))
			for _, key := range keys {
				m.enqueue(key)
			}
		}
	}()
}
