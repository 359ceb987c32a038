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

// fleet is the fleet variable's value now.
func (s *server) fleet() map[string]any {
	names := s.rt.opts.Clusters.Names()
	clusters := make([]graph.FleetCluster, 0, len(names))
	for _, n := range names {
		clusters = append(clusters, graph.FleetCluster{Name: n, Labels: s.rt.opts.Clusters.Labels(n)})
	}
	return graph.FleetValue(clusters)
}

// watchFleet requeues every instance of the graph when the fleet changes,
// until ctx ends.
func (s *server) watchFleet(ctx context.Context) {
	last, _ := json.Marshal(s.fleet())
	t := time.NewTicker(fleetPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, _ := json.Marshal(s.fleet())
		if string(now) == string(last) {
			continue
		}
		last = now
		s.requeueAll()
	}
}
