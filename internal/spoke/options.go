package spoke

import (
	"context"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

const (
	// DefaultWorkers is the default number of concurrent reconciles per graph.
	DefaultWorkers = 8
	// DefaultItemConcurrency is how many items of one forEach are applied
	// at once by default.
	DefaultItemConcurrency = 8
	// DefaultFieldManager is the default server-side apply field manager.
	DefaultFieldManager = "fleetgraph"
	// DefaultDeletionPoll is how often a deleting instance rechecks children
	// that have not gone yet, besides reacting to their delete events.
	DefaultDeletionPoll = 5 * time.Second
	// DefaultGateRetry is the first delay before retrying a failed Gate or
	// watch start; it doubles up to DefaultGateRetryMax.
	DefaultGateRetry = 200 * time.Millisecond
	// DefaultGateRetryMax caps the delay between Gate retries.
	DefaultGateRetryMax = 30 * time.Second
	// DefaultResync is how often, by default, every child of an instance is
	// applied again even if nothing reported a change.
	DefaultResync = 10 * time.Minute
	// DefaultCallTimeout bounds, by default, each call to a spoke's API
	// server and each wait for a new watch's initial list.
	DefaultCallTimeout = 30 * time.Second
	// DefaultClusterLabelsPoll is how often, by default, the labels of a
	// cluster are asked again for graphs that read cluster.labels.
	DefaultClusterLabelsPoll = 2 * time.Second
	// DefaultOrphanGrace is how long, by default, a child whose instance
	// is gone is left before it is deleted (orphans.go).
	DefaultOrphanGrace = 30 * time.Second
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

// GateFunc decides whether a version of a graph may be served on a cluster
// yet. It is called in a goroutine of its own for each (version, cluster)
// pair, with a context that ends when the cluster is disengaged or the
// version stopped; it may block. A nil error opens the gate; an error is
// logged and the call is retried with backoff.
type GateFunc func(ctx context.Context, cluster multicluster.ClusterName, v Version) error

// Options configures a Runtime. The zero value is usable.
type Options struct {
	// Workers is the number of instances of one graph reconciled
	// concurrently, across all clusters. One cluster gets at most its share
	// of them, Workers divided by the number of clusters served (rounded
	// up), so that a hung cluster holds only its own share; within a
	// cluster, a namespace gets at most that share divided by the
	// namespaces with work (rounded up), and once the cluster has instances
	// in several namespaces, one slot of its share is kept for a namespace
	// with nothing in flight. Defaults to DefaultWorkers.
	Workers int
	// CallTimeout bounds each call a reconcile makes to a cluster (reads,
	// applies, patches, deletes, lists) and how long it waits for a new
	// watch's initial list (which goes on in the background). A call that
	// times out fails the reconcile, which is retried with backoff.
	// Defaults to DefaultCallTimeout; a negative value means no timeout.
	CallTimeout time.Duration
	// ItemConcurrency is how many children of one forEach node one reconcile
	// applies at once. Defaults to DefaultItemConcurrency; 1 applies them one
	// after another.
	ItemConcurrency int
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
	// FieldManager is the field manager of every write: server-side apply
	// of children, and patches of instances. Defaults to DefaultFieldManager.
	FieldManager string
	// Gate is consulted before a graph's watches start on a cluster, e.g. to
	// wait until the graph's CRD is established there. Defaults to none: the
	// watch on instances is retried with backoff until the kind is served.
	Gate GateFunc
	// DeletionPoll bounds how long a deleting instance waits before checking
	// its children again. Defaults to DefaultDeletionPoll.
	DeletionPoll time.Duration
	// GateRetry and GateRetryMax shape the backoff of Gate and of starting
	// the instance watch. Default to DefaultGateRetry and DefaultGateRetryMax.
	GateRetry, GateRetryMax time.Duration
	// Resync is the period of each instance's full resync: every child is
	// applied again, even one the Runtime believes unchanged, which puts
	// back drift that no watch event reported. Each instance's period is
	// lengthened by a random part of up to a fifth, so that instances do not
	// resync together. Defaults to DefaultResync; a negative value turns
	// the resync off.
	Resync time.Duration
	// AdoptUnowned lets an instance take over an existing object that has a
	// child's name and no fleetgraph owner label: the object is applied to,
	// labelled as the instance's child, and later pruned or deleted with it.
	// Defaults to false: such an object is left alone and the instance goes
	// to ERROR naming it (reason OwnershipConflict). An object labelled for
	// another instance is never taken over.
	AdoptUnowned bool
	// ConfineToNamespace keeps each instance's children and external
	// references in the instance's namespace (confine.go): a child rendered
	// in another namespace, or of a cluster-scoped kind, is not written; an
	// externalRef naming another namespace or a cluster-scoped kind is not
	// read, and one by selector without a namespace selects (and watches)
	// in the instance's namespace only. The children and references of a
	// cluster-scoped instance are all refused, unless its graph is one of
	// ClusterScopedGraphs. A refused instance goes to ERROR (reason
	// OutsideNamespace) naming the resource id and the object. Defaults to
	// false, as kro: templates and references may use any namespace.
	ConfineToNamespace bool
	// ClusterScopedGraphs names the graphs (RGD names) whose cluster-scoped
	// instances ConfineToNamespace lets through: graphs the platform trusts,
	// such as one that sets up a tenant's namespace, run unconfined as in
	// kro. List only graphs tenants cannot write. Defaults to none: under
	// ConfineToNamespace no cluster-scoped instance writes or reads
	// anything. Without ConfineToNamespace it has no effect.
	ClusterScopedGraphs []string
	// OrphanGrace is how long a child whose owning instance no longer
	// exists (its finalizer was removed by hand, say, or its deletion was
	// interrupted) is left before the Runtime deletes it. Only children
	// labelled as the graph's and written by FieldManager are deleted,
	// once a live read confirms that no instance has their owner's UID;
	// children left on purpose by a release (the orphan option, a cluster
	// leaving the fleet) are not. Defaults to DefaultOrphanGrace; a
	// negative value turns the collection off.
	OrphanGrace time.Duration
	// ClusterLabels gives the labels of a cluster to the expressions of
	// graphs that read cluster.labels (graph.ClusterLabels); it is called
	// once per reconcile of such a graph's instance, so it must be quick
	// and safe for concurrent use. Defaults to nil: every cluster has no
	// labels.
	ClusterLabels func(multicluster.ClusterName) map[string]string
	// ClusterLabelsPoll is how often ClusterLabels is asked again, on each
	// cluster, for graphs that read cluster.labels: when a cluster's labels
	// changed, every instance of such a graph there is reconciled again
	// (children an includeWhen now excludes are pruned). Graphs that do not
	// read labels are never asked about nor requeued. Defaults to
	// DefaultClusterLabelsPoll; a negative value turns the polling off.
	ClusterLabelsPoll time.Duration
	// ClusterValues gives the values the platform gives the named graph on
	// a cluster, for graphs that read cluster.values (graph.ClusterValues);
	// nil means none. It is called once per reconcile of such a graph's
	// instance, so it must be quick and safe for concurrent use, and the
	// map it returns is only read (it may be shared). When the values may
	// have changed, call Runtime.ClusterValuesChanged; they are also asked
	// again when a cluster's labels change (ClusterLabelsPoll). Defaults
	// to nil: no values.
	ClusterValues func(cluster multicluster.ClusterName, graphName string) map[string]any
	// LocalClusterName is what cluster.name holds on the cluster engaged
	// as "" (the manager's own, in single-cluster mode). Defaults to "".
	LocalClusterName string
	// CountsChanged, if set, is told the graph's name whenever the
	// instance counts of the graph on some cluster (Runtime.Counts)
	// change. It is called from informer event handlers: it must be quick
	// and must not block. Defaults to nil.
	CountsChanged func(graphName string)
	// Logger is the logger. Defaults to controller-runtime's log.Log named
	// "spoke".
	Logger logr.Logger
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.ItemConcurrency <= 0 {
		o.ItemConcurrency = DefaultItemConcurrency
	}
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if o.DeletionPoll <= 0 {
		o.DeletionPoll = DefaultDeletionPoll
	}
	if o.GateRetry <= 0 {
		o.GateRetry = DefaultGateRetry
	}
	if o.Resync == 0 {
		o.Resync = DefaultResync
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.OrphanGrace == 0 {
		o.OrphanGrace = DefaultOrphanGrace
	}
	if o.ClusterLabelsPoll == 0 {
		o.ClusterLabelsPoll = DefaultClusterLabelsPoll
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
	o.ClusterScopedGraphs = slices.Clone(o.ClusterScopedGraphs)
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("spoke")
	}
	return o
}
