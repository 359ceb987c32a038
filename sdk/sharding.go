package sdk

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/internal/replicas"
	"github.com/fleetgraph/fleetgraph/internal/shard"
)

// ShardingOptions configures one of N hub replicas that share a hub
// cluster; see NewShardedCoordinator. The compiler keeps it equal to the
// internal options (shard.Options(o)).
type ShardingOptions struct {
	// ID names this replica among its peers; it must be unique and stable
	// for the replica's life. Defaults to the host name (a pod's name).
	ID string
	// Weight is this replica's relative capacity: it serves about
	// Weight/ΣWeights of the clusters. Defaults to 1.
	Weight uint32
	// Namespace on the hub cluster holds the peer Leases
	// (<Prefix>-peer-<id>). Defaults to "kube-system".
	Namespace string
	// Prefix starts every Lease name. Defaults to "mcr", as
	// multicluster-runtime's own registry uses.
	Prefix string
	// LeaseDuration is how long a peer Lease stays valid without renewal:
	// the others take a dead replica's clusters over after it. Defaults to
	// 20 seconds.
	LeaseDuration time.Duration
	// RenewInterval bounds how long a replica goes without renewing its
	// Lease; one that could not renew for LeaseDuration-RenewInterval
	// stops serving, before the others may start. Must be under
	// LeaseDuration (so replicas' clocks must agree to well within it).
	// Defaults to LeaseDuration/3.
	RenewInterval time.Duration
	// Probe is how often the coordinator decides which clusters this
	// replica serves: each decision renews the Lease and re-lists the
	// peers. Decisions run every min(Probe, RenewInterval). Defaults to 5
	// seconds.
	Probe time.Duration
	// Logger defaults to none.
	Logger logr.Logger
}

// TakeoverBound is how long, at most, the clusters of a replica that died
// wait for another replica: LeaseDuration + 2 × min(Probe, RenewInterval),
// with their defaults (30 s).
func (o ShardingOptions) TakeoverBound() time.Duration { return shard.Options(o).TakeoverBound() }

// NewShardedCoordinator returns the coordinator that makes this process one
// of N hub replicas: give it to the multicluster manager with
// mcmanager.WithCoordinator. Each cluster the provider offers is served by
// exactly one replica: each replica writes in its Lease the replicas it
// decides by, rendezvous hashing over them gives every cluster to one, and
// a replica starts a cluster only once no other live Lease claims it (see
// internal/shard for why that is safe). Each decision costs one write and
// two lists, whatever the fleet's size; when a replica dies the others
// take its clusters over within opts.TakeoverBound(). hubClient reads and
// writes Leases on the hub cluster: make it with NewShardingClient (a
// direct client, since a decision must read what is on the API server,
// with a connection of its own, so that renewals do not queue behind the
// manager's lists).
//
// It implements multicluster-runtime's Coordinator interface but is not
// its sharded coordinator, which fences every cluster with a Lease of its
// own and does not scale past a few thousand clusters; replicas of the two
// cannot share a fleet.
//
// With replicas, each Hub's FleetStatus and Clusters cover only the
// clusters it serves; set Options.Replicas.ID to the same ID so that the RGD's
// fleet status is the union over replicas. Set Options.Fleet.DepartureGrace
// negative: a cluster handed to another replica leaves this one, and its
// clean-up would release what the new owner serves.
func NewShardedCoordinator(hubClient client.Client, opts ShardingOptions) mcmanager.Coordinator {
	return shard.NewCoordinator(hubClient, shard.Options(opts))
}

// ErrLeaseTimings is returned when the coordinator starts with a
// RenewInterval not under its LeaseDuration (in whole seconds, as a Lease
// holds it): such a replica could never serve.
var ErrLeaseTimings = shard.ErrLeaseTimings

// NewShardingClient returns a client of the hub cluster for
// NewShardedCoordinator with an HTTP connection of its own. client-go
// shares one connection among every client of the same config, and HTTP/2
// queues requests on it: a replica's Lease renewals would then wait behind
// its informers' lists of thousands of clusters, miss their deadline, and
// make the replica stop serving (10,000 clusters on 4 replicas: every
// replica stopped all its clusters two or three times in its first minute).
// Proxies are read from the environment, as client-go does by default.
func NewShardingClient(cfg *rest.Config) (client.Client, error) {
	c, err := client.New(ownConnection(cfg), client.Options{})
	if err != nil {
		return nil, fmt.Errorf("client for the replicas' Leases: %w", err)
	}
	return c, nil
}

// ownConnection is cfg with a Proxy function of its own, which makes
// client-go build a new transport rather than share the cached one (a
// function cannot be compared).
func ownConnection(cfg *rest.Config) *rest.Config {
	own := rest.CopyConfig(cfg)
	own.Proxy = utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)
	return own
}

// Clusters returns the names of the clusters this Hub serves, sorted: with
// a sharded coordinator, the ones this replica owns.
func (h *Hub) Clusters() []string { return h.clusterNames() }

// DefaultReplicaStatusTTL is ReplicaOptions.StatusTTL's default.
const DefaultReplicaStatusTTL = time.Minute

// sharding is the Hub as one of several replicas: it merges the fleet
// status written on each RGD with the other replicas' records.
type sharding struct {
	h *Hub
	// replicas keeps this Hub's status record and merges it with other
	// replicas'. Set once by setup, as the manager starts, before the RGD
	// controller but not before the rollouts that read it too (nil
	// without the RGD controller).
	replicas atomic.Pointer[replicas.Status]
	// warned: a failure to keep the records was logged.
	warned atomic.Bool
}

// loneReplica names a lone hub's status records (Options.Replicas.ID unset).
const loneReplica = "hub"

// setup prepares the per-replica status records: this Hub's share when
// it is one of several replicas (Options.Replicas.ID), else the record of
// every cluster, which a lone hub keeps for `fleetgraph status`.
func (s *sharding) setup(local manager.Manager) error {
	h := s.h
	c, err := client.New(local.GetConfig(), client.Options{})
	if err != nil {
		return fmt.Errorf("client for the replicas' status records: %w", err)
	}
	ns, ttl := h.opts.Replicas.Namespace, h.opts.Replicas.StatusTTL // defaults filled by NewHub
	replica := h.opts.Replicas.ID
	if replica == "" {
		replica = loneReplica
	}
	s.replicas.Store(&replicas.Status{Client: c, Namespace: ns, Replica: replica, TTL: ttl, Lone: h.opts.Replicas.ID == ""})
	return nil
}

// fleetStatus is the fleet status written on the RGD: this Hub's view,
// merged with the other replicas' when there are several. The view is
// published as this Hub's record, and the metrics are set from it.
func (s *sharding) fleetStatus(name string) GraphStatus {
	h := s.h
	own := h.clusterStatus(name)
	setFleetMetrics(own) // fleet_metrics.go
	records := s.replicas.Load()
	if records == nil {
		return own
	}
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	merged, err := records.Merged(ctx, own)
	if err != nil {
		s.logOnce(name, err)
	}
	return merged
}

// logOnce logs a failure to keep the records, at V(1) after the first: a
// hub whose role may not write them (an older RBAC) says so once, not at
// every status refresh.
func (s *sharding) logOnce(name string, err error) {
	if s.warned.CompareAndSwap(false, true) {
		s.h.opts.Logger.Info("keeping the fleet status records of the replicas failed; the RGD's status has what was merged, and `fleetgraph status` may lack clusters", "graph", name, "reason", err.Error())
		return
	}
	s.h.opts.Logger.V(1).Info("keeping the fleet status records of the replicas failed", "graph", name, "reason", err.Error())
}

// others is, for the named graph, the clusters other replicas serve, and
// whether this Hub knows them: a lone hub does (none); a replica once it
// has read the others' records of the graph.
func (s *sharding) others(name string) (map[string]replicas.Foreign, bool) {
	records := s.replicas.Load()
	if records == nil {
		return nil, s.h.opts.Replicas.ID == ""
	}
	return records.Others(name)
}

// forget deletes this replica's status record of a graph that
// is removed. A failure is logged only: the record has expired within
// Replicas.StatusTTL, and then any replica's prune, this one's included,
// deletes it.
func (s *sharding) forget(ctx context.Context, name string) {
	forgetFleetMetrics(name) // fleet_metrics.go
	records := s.replicas.Load()
	if records == nil {
		return
	}
	if err := records.Forget(ctx, name); err != nil {
		s.h.opts.Logger.Info("could not delete this replica's fleet status record of the removed graph; it is pruned once expired", "graph", name, "reason", err.Error())
	}
}
