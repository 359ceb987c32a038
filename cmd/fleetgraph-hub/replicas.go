package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/sdk"
)

// Defaults of the replica flags; see sdk.ShardingOptions and sdk.Options.
const (
	defaultShardNamespace    = "kube-system"
	defaultShardLease        = 20 * time.Second
	defaultShardProbe        = 5 * time.Second
	defaultReplicaStatusTTL  = sdk.DefaultReplicaStatusTTL
	replicaIDFromEnvironment = "POD_NAME"
)

// replicaOptions are the flags of one of N sharded hub replicas.
type replicaOptions struct {
	shard     bool
	id        string
	namespace string
	lease     time.Duration
	renew     time.Duration
	probe     time.Duration
	statusTTL time.Duration
}

func (r *replicaOptions) bindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&r.shard, "replicas-shard", false,
		"run as one of N replicas that share the spokes: each spoke is served by exactly one replica (sdk.NewShardedCoordinator); excludes --leader-elect")
	fs.StringVar(&r.id, "replica-id", "",
		"this replica's name, unique and stable among the replicas (default: $"+replicaIDFromEnvironment+", else the host name, which is a pod's name)")
	fs.StringVar(&r.namespace, "shard-namespace", defaultShardNamespace,
		"namespace on the hub of the replicas' Leases (mcr-peer-<replica>) and fleet status records")
	fs.DurationVar(&r.lease, "shard-lease-duration", defaultShardLease,
		"how long a replica's peer Lease stays valid without renewal; a killed replica's spokes are taken over after about this")
	fs.DurationVar(&r.renew, "shard-renew-interval", 0, "the longest a replica goes without renewing its Lease; one that could not renew for lease - renew stops serving (0: a third of --shard-lease-duration)")
	fs.DurationVar(&r.probe, "shard-probe", defaultShardProbe, "how often a replica decides which spokes it serves, renewing its Lease (at least every --shard-renew-interval)")
	fs.DurationVar(&r.statusTTL, "replica-status-ttl", defaultReplicaStatusTTL,
		"how long a replica's fleet status record counts after its last renewal; longer than the takeover bound (lease + 2 × min(renew, probe))")
}

func (r *replicaOptions) validate() error {
	if !r.shard {
		return nil
	}
	if r.id == "" {
		r.id = os.Getenv(replicaIDFromEnvironment)
	}
	if r.id == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--replica-id not set and no host name to default to: %w", err)
		}
		r.id = host
	}
	if r.lease <= 0 || r.probe <= 0 || r.renew < 0 {
		return fmt.Errorf("--shard-lease-duration and --shard-probe must be positive and --shard-renew-interval not negative, got %s, %s and %s", r.lease, r.probe, r.renew)
	}
	if r.renew >= r.lease {
		return fmt.Errorf("--shard-renew-interval (%s) must be shorter than --shard-lease-duration (%s), or Leases expire between renewals", r.renew, r.lease)
	}
	if bound := r.sharding().TakeoverBound(); r.statusTTL <= bound {
		return fmt.Errorf("--replica-status-ttl (%s) must be longer than the takeover bound lease + renew + probe (%s), or a killed replica's spokes drop out of the fleet status before their new owner reports them", r.statusTTL, bound)
	}
	return nil
}

// validateResync checks that a replica renews its status records (at a
// status refresh, once a third of the TTL has passed) before they expire.
func (r *replicaOptions) validateResync(resync time.Duration) error {
	if resync == 0 {
		resync = sdk.DefaultStatusResync
	}
	if r.shard && 3*resync >= 2*r.statusTTL {
		return fmt.Errorf("--status-resync (%s) must be under two thirds of --replica-status-ttl (%s): records are renewed only at a status refresh", resync, r.statusTTL)
	}
	return nil
}

// sharding is the coordinator's configuration.
func (r *replicaOptions) sharding() sdk.ShardingOptions {
	return sdk.ShardingOptions{
		ID:            r.id,
		Namespace:     r.namespace,
		LeaseDuration: r.lease,
		RenewInterval: r.renew,
		Probe:         r.probe,
	}
}

// coordinator is the manager option that makes this process a sharded
// replica; none without --replicas-shard.
func (r *replicaOptions) coordinator(cfg *rest.Config) ([]mcmanager.Option, error) {
	if !r.shard {
		return nil, nil
	}
	c, err := sdk.NewShardingClient(cfg)
	if err != nil {
		return nil, err
	}
	s := r.sharding()
	s.Logger = ctrl.Log.WithName("shard")
	return []mcmanager.Option{mcmanager.WithCoordinator(sdk.NewShardedCoordinator(c, s))}, nil
}

// hubOptions adds to o what a sharded replica needs: its name for the
// fleet status records, and no departure clean-up, since a spoke handed to
// another replica leaves this one while the new owner serves it.
func (r *replicaOptions) hubOptions(o sdk.Options) sdk.Options {
	if !r.shard {
		return o
	}
	o.Replicas.ID = r.id
	o.Replicas.Namespace = r.namespace
	o.Replicas.StatusTTL = r.statusTTL
	o.Fleet.DepartureGrace = -1
	return o
}
