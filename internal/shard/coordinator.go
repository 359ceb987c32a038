package shard

import (
	"os"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded"
)

// Options configures a replica's share of the fleet. Every replica of one
// hub must use the same Namespace, Prefix and timings.
type Options struct {
	// ID names this replica among its peers; it must be unique and stable
	// for the replica's life. Defaults to the host name (a pod's name).
	ID string
	// Weight is this replica's relative capacity: it serves about
	// Weight/ΣWeights of the clusters. Defaults to 1.
	Weight uint32
	// Namespace on the hub cluster holds the peer Leases (<Prefix>-peer-<id>)
	// and the per-cluster fence Leases (<Prefix>-shard-<cluster>). Defaults
	// to "kube-system".
	Namespace string
	// Prefix starts every Lease name. Defaults to "mcr", as
	// multicluster-runtime's own registry uses.
	Prefix string
	// LeaseDuration is how long a peer Lease and a cluster's fence stay
	// valid without renewal: a replica that dies stops being hashed over,
	// and its clusters' fences expire, after it. Defaults to 20 seconds.
	LeaseDuration time.Duration
	// RenewInterval is how often both are renewed and the peers re-listed.
	// Defaults to LeaseDuration/3.
	RenewInterval time.Duration
	// Probe is how often the coordinator re-decides which clusters this
	// replica serves. Defaults to 5 seconds.
	Probe time.Duration
	// Logger defaults to none.
	Logger logr.Logger
}

func (o Options) withDefaults() Options {
	if o.ID == "" {
		o.ID, _ = os.Hostname()
	}
	if o.Namespace == "" {
		o.Namespace = "kube-system"
	}
	if o.Prefix == "" {
		o.Prefix = "mcr"
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 20 * time.Second
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = o.LeaseDuration / 3
	}
	if o.Probe == 0 {
		o.Probe = 5 * time.Second
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	return o
}

// TakeoverBound is how long after a replica dies its clusters may wait
// for another: its Leases expire, a peer notices at its next refresh and
// takes the fence at its next probe.
func (o Options) TakeoverBound() time.Duration {
	o = o.withDefaults()
	return o.LeaseDuration + o.RenewInterval + o.Probe
}

// NewCoordinator returns multicluster-runtime's sharded coordinator for
// the hub cluster c, with PeerRegistry as its membership.
func NewCoordinator(c client.Client, opts Options) *sharded.Coordinator {
	o := opts.withDefaults()
	reg := NewPeerRegistry(c, o.Namespace, o.Prefix+"-peer", o.ID, o.Weight, o.LeaseDuration, o.RenewInterval, o.Logger.WithName("peers"))
	reg.learnPeers(o.RenewInterval)
	return sharded.New(c, o.Logger,
		sharded.WithPeerRegistry(reg),
		sharded.WithShardLease(o.Namespace, o.Prefix+"-shard"),
		sharded.WithPerClusterLease(true),
		sharded.WithLeaseTimings(o.LeaseDuration, o.RenewInterval, min(o.Probe, 750*time.Millisecond)),
		sharded.WithSynchronizationIntervals(o.Probe, 3*o.Probe),
	)
}
