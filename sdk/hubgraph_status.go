package sdk

import (
	"context"
	"time"

	"github.com/fleetgraph/fleetgraph/hub"
)

// hubGraphStatusTimeout bounds FleetStatus's read of a hub graph's
// instances from the hub's cache (it waits only while that cache syncs).
const hubGraphStatusTimeout = 5 * time.Second

// hubGraphStatus fills st for a hub graph: its CRD and instances are on
// the hub, so the hub's own entry counts them, and Targets lists every
// cluster they write to with its reachability. It reports false for a
// graph that is not a hub graph.
func (h *Hub) hubGraphStatus(name string, st *hub.GraphStatus) bool {
	if h.hubGraphs == nil || !h.hubGraphs.Serves(name) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), hubGraphStatusTimeout)
	defer cancel()
	uses, err := h.hubGraphs.Uses(ctx, name)
	if err != nil {
		h.opts.Logger.V(1).Info("reading a hub graph's instances for its status", "graph", name, "error", err.Error())
		return true
	}
	engaged := map[string]bool{"": true}
	for _, n := range (hubClusters{h}).Names() {
		engaged[n] = true
	}
	st.Targets = make([]hub.TargetStatus, 0, len(uses))
	for _, u := range uses {
		ts := hub.TargetStatus{Cluster: u.Cluster, Instances: u.Instances, ReadyInstances: u.Ready, Engaged: engaged[u.Cluster]}
		if u.Cluster != "" {
			ts.Unreachable, _ = h.fanOut.Unreachable(u.Cluster)
		}
		st.Targets = append(st.Targets, ts)
	}
	return true
}
