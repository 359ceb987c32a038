package hubgraph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// DefaultFleetPoll is the default of Options.FleetPoll.
const DefaultFleetPoll = 2 * time.Second

// fleetOf is the fleet variable's value now: the engaged clusters that
// visible keeps (every one when it is nil).
func fleetOf(c Clusters, visible func(name string, labels map[string]string) bool) map[string]any {
	names := c.Names()
	clusters := make([]graph.FleetCluster, 0, len(names))
	for _, n := range names {
		l := c.Labels(n)
		if visible != nil && !visible(n, l) {
			continue
		}
		clusters = append(clusters, graph.FleetCluster{Name: n, Labels: l})
	}
	return graph.FleetValue(clusters)
}

// watchFleet calls requeue when the fleet visible keeps changes, until
// ctx ends: it looks every poll, and at once when notice receives (a
// cluster was relabelled: see Runtime.ClusterLabelsChanged). A notice that
// changed nothing the fleet variable shows requeues nothing.
func watchFleet(ctx context.Context, c Clusters, visible func(string, map[string]string) bool, poll time.Duration, notice <-chan struct{}, requeue func()) {
	last, _ := json.Marshal(fleetOf(c, visible))
	every(ctx, poll, notice, func() {
		now, _ := json.Marshal(fleetOf(c, visible))
		if string(now) == string(last) {
			return
		}
		last = now
		requeue()
	})
}

// ClusterLabelsChanged tells the Runtime that the named cluster's labels
// (Clusters.Labels) changed: every graph that reads the fleet variable
// looks at the fleet again at once, instead of at its next poll
// (Options.FleetPoll). It does not wait, and a graph already told and
// not yet looking is told once.
func (r *Runtime) ClusterLabelsChanged(string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.graphs {
		if s.g.UsesFleet() {
			select {
			case s.fleetNotices <- struct{}{}:
			default:
			}
		}
	}
}

// every calls f every period and each time nudge receives (nil: never),
// one call at a time, until ctx ends.
func every(ctx context.Context, period time.Duration, nudge <-chan struct{}, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-nudge:
		}
		f()
	}
}
