package hubgraph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// fleetPoll is how often a graph that reads the fleet variable looks for
// a cluster that joined, left or was relabelled.
const fleetPoll = 2 * time.Second

// fleetOf is the fleet variable's value now.
func fleetOf(c Clusters) map[string]any {
	names := c.Names()
	clusters := make([]graph.FleetCluster, 0, len(names))
	for _, n := range names {
		clusters = append(clusters, graph.FleetCluster{Name: n, Labels: c.Labels(n)})
	}
	return graph.FleetValue(clusters)
}

// watchFleet calls requeue when the fleet changes, until ctx ends.
func watchFleet(ctx context.Context, c Clusters, requeue func()) {
	last, _ := json.Marshal(fleetOf(c))
	t := time.NewTicker(fleetPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, _ := json.Marshal(fleetOf(c))
		if string(now) == string(last) {
			continue
		}
		last = now
		requeue()
	}
}
