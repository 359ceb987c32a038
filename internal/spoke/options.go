package spoke

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// The defaults of the Config fields that only the spoke runtime has; the
// defaults of the fields every driver shares are instance's.
const (
	// DefaultDeletionPoll is how often a deleting instance rechecks children
	// that have not gone yet, besides reacting to their delete events.
	DefaultDeletionPoll = 5 * time.Second
	// DefaultGateRetry is the first delay before retrying a failed Gate or
	// watch start; it doubles up to DefaultGateRetryMax.
	DefaultGateRetry = 200 * time.Millisecond
	// DefaultGateRetryMax caps the delay between Gate retries.
	DefaultGateRetryMax = 30 * time.Second
	// DefaultInstanceCatchUp is how long, by default, a reconcile is put
	// off waiting for the instance informer to deliver what the
	// metadata-only instance watch already showed, before it reads the
	// instance itself.
	DefaultInstanceCatchUp = 100 * time.Millisecond
	// DefaultInstanceHeadsAbove is the estimated size (bytes of JSON) of
	// an instance from which, by default, its kind is also watched through
	// a metadata-only watch: an instance watch decodes 64 KiB of instance
	// in about a millisecond, so smaller instances cannot hold it back by
	// much, and ordinary instances are a few KiB.
	DefaultInstanceHeadsAbove = 64 << 10
)

// GateFunc is the public spoke.GateFunc, over this package's Version: each
// member calls it (through pass) from its start, retrying with
// Config.GateRetry's backoff.
type GateFunc func(ctx context.Context, cluster multicluster.ClusterName, v Version) error

// Config configures a Runtime: the Options every instance engine shares
// (what they mean is the public spoke.Options' contract, which mirrors
// them), and what only the spoke runtime has.
type Config struct {
	instance.Options
	// Gate is consulted before a graph's watches start on a cluster, e.g. to
	// wait until the graph's CRD is established there. Defaults to none: the
	// watch on instances is retried with backoff until the kind is served.
	Gate GateFunc
	// InstanceCatchUp is how long a reconcile started by the metadata-only
	// instance watch is put off (without holding a worker) waiting for the
	// instance informer, whose events carry whole instances and so may lag
	// behind a tenant's large ones, to deliver the version it was started
	// for; then it reads the instance from the API server (one request). Defaults to
	// DefaultInstanceCatchUp; a negative value starts no metadata-only
	// instance watch, and reconciles wait for the instance informer
	// however late it is (one watch less per graph and cluster).
	InstanceCatchUp time.Duration
	// InstanceHeadsAbove is the estimated size, in bytes of JSON, from
	// which an instance starts the metadata-only watch of its kind: on
	// each cluster, a graph's instances are watched by the instance
	// informer alone until it delivers one at least this large; from then
	// on the metadata-only watch runs too, as long as the graph is served
	// there. Defaults to DefaultInstanceHeadsAbove; a negative value starts
	// the metadata-only watch with the instance watch, whatever the
	// instances' size. A negative InstanceCatchUp starts none.
	InstanceHeadsAbove int
	// DeletionPoll bounds how long a deleting instance waits before checking
	// its children again. Defaults to DefaultDeletionPoll.
	DeletionPoll time.Duration
	// GateRetry and GateRetryMax shape the backoff of Gate and of starting
	// the instance watch. Default to DefaultGateRetry and DefaultGateRetryMax.
	GateRetry, GateRetryMax time.Duration
}

func (o Config) withDefaults() Config {
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("spoke")
	}
	o.Options = o.Options.WithDefaults()
	if o.DeletionPoll <= 0 {
		o.DeletionPoll = DefaultDeletionPoll
	}
	if o.GateRetry <= 0 {
		o.GateRetry = DefaultGateRetry
	}
	if o.InstanceCatchUp == 0 {
		o.InstanceCatchUp = DefaultInstanceCatchUp
	}
	if o.InstanceHeadsAbove == 0 {
		o.InstanceHeadsAbove = DefaultInstanceHeadsAbove
	}
	if o.GateRetryMax <= 0 {
		o.GateRetryMax = DefaultGateRetryMax
	}
	return o
}
