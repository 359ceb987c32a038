package sdk

import (
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/internal/shard"
)

// ShardingOptions configures one of N hub replicas that share a hub
// cluster; see NewShardedCoordinator. Every field documents its default.
type ShardingOptions = shard.Options

// NewShardedCoordinator returns the coordinator that makes this process one
// of N hub replicas: give it to the multicluster manager with
// mcmanager.WithCoordinator. It is multicluster-runtime's sharded
// coordinator: each cluster the provider offers is served by exactly one
// replica (rendezvous hashing over the replicas' Leases, fenced by a Lease
// per cluster), and when a replica dies the others take its clusters over
// within opts.TakeoverBound(). hubClient reads and writes Leases on the hub
// cluster (a direct client such as client.New(cfg, ...), since the cache
// does not run before the manager starts).
//
// With replicas, each Hub's FleetStatus and Clusters cover only the
// clusters it serves. Set Options.DepartureGrace negative: a cluster
// handed to another replica leaves this one, and its clean-up would
// release what the new owner serves.
func NewShardedCoordinator(hubClient client.Client, opts ShardingOptions) mcmanager.Coordinator {
	return shard.NewCoordinator(hubClient, opts)
}

// Clusters returns the names of the clusters this Hub serves, sorted: with
// a sharded coordinator, the ones this replica owns.
func (h *Hub) Clusters() []string {
	h.mu.Lock()
	out := make([]string, 0, len(h.clusters))
	for name := range h.clusters {
		out = append(out, name)
	}
	h.mu.Unlock()
	slices.Sort(out)
	return out
}
