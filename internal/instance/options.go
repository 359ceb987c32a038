package instance

import (
	"context"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// The defaults of Options, declared here once: the drivers, the sdk and
// the public spoke package (whose constants are these) use them. The field
// manager is v1alpha1.FieldManager, which the public hub package shares.
const (
	// DefaultWorkers is how many instances of one graph a driver
	// reconciles at once. Both drivers share it: a hub graph's reconcile
	// waits on several clusters, so it needs workers no less than a
	// spoke's, and eight is what the spoke runtime's fairness (a share per
	// cluster, a slot kept for a quiet namespace) and its benchmarks were
	// measured with.
	DefaultWorkers = 8
	// DefaultItemConcurrency is how many items of one forEach one
	// reconcile applies at once.
	DefaultItemConcurrency = 8
	// DefaultFieldManager is the field manager of every write: children's
	// applies and instances' patches. Ownership checks look for it.
	DefaultFieldManager = v1alpha1.FieldManager
	// DefaultCallTimeout bounds each call to a cluster's API server, and
	// each wait for a new watch's initial list.
	DefaultCallTimeout = 30 * time.Second
	// DefaultResync is the period of each instance's full resync
	// (resync.go).
	DefaultResync = 10 * time.Minute
	// DefaultOrphanGrace is how long a child whose instance is gone is
	// left before it is deleted.
	DefaultOrphanGrace = 30 * time.Second
	// DefaultClusterLabelsPoll is how often the labels of a cluster are
	// asked again for graphs that read them.
	DefaultClusterLabelsPoll = 2 * time.Second
)

// Options are how instances are served, whichever driver serves them. The
// public spoke.Options is the same list of fields, converted to this type
// (the compiler keeps the two equal); its documentation is the contract,
// and what follows says where each field is used.
type Options struct {
	// Workers is the size of a driver's pool of reconciles per graph (the
	// spoke runtime shares it among clusters and namespaces, package
	// fair). Defaults to DefaultWorkers.
	Workers int
	// ItemConcurrency bounds the applies of one forEach node in flight in
	// one reconcile (evaluate.go). Defaults to DefaultItemConcurrency.
	ItemConcurrency int
	// CallTimeout bounds every call to a cluster and every wait for a
	// watch to start. Defaults to DefaultCallTimeout; negative: no bound.
	CallTimeout time.Duration
	// FieldManager writes children and instances, and is what ownership
	// and orphan collection look for in managedFields. Defaults to
	// DefaultFieldManager.
	FieldManager string
	// Resync is the period of each instance's full resync (resync.go).
	// Defaults to DefaultResync; negative: off.
	Resync time.Duration
	// AdoptUnowned lets a claim take an existing object without an owner
	// label (claim.go). Defaults to false.
	AdoptUnowned bool
	// ConfineToNamespace keeps children and external references in the
	// instance's namespace (confine.go). Defaults to false.
	ConfineToNamespace bool
	// ClusterScopedGraphs are the graphs whose cluster-scoped instances
	// ConfineToNamespace lets through. Defaults to none.
	ClusterScopedGraphs []string
	// OrphanGrace is how long a child of a gone instance is left before
	// the orphanage deletes it (orphans.go). Defaults to
	// DefaultOrphanGrace; negative: no collection.
	OrphanGrace time.Duration
	// ClusterLabels gives the labels of the cluster an instance lives in
	// to graphs that read cluster.labels; the spoke driver binds the
	// cluster variable. Defaults to nil: no labels.
	ClusterLabels func(multicluster.ClusterName) map[string]string
	// ClusterLabelsPoll is how often the spoke driver asks ClusterLabels
	// again. Defaults to DefaultClusterLabelsPoll; negative: never.
	ClusterLabelsPoll time.Duration
	// ClusterValues gives the platform's values of a graph on a cluster
	// to graphs that read cluster.values. Defaults to nil: none.
	ClusterValues func(cluster multicluster.ClusterName, graphName string) map[string]any
	// LocalClusterName is cluster.name on the cluster engaged as "".
	// Defaults to "".
	LocalClusterName string
	// CountsChanged, if set, is told a graph's name whenever its
	// instances change in a way their counts may show (a create, an
	// update or a delete the instance watch delivers), so that what shows
	// them can follow at once. It is called from event handlers: it must
	// be quick and must not block. Defaults to nil.
	CountsChanged func(graphName string)
	// Logger is the logger. Defaults to controller-runtime's log.Log.
	Logger logr.Logger
}

// WithDefaults returns o with every unset field at its default.
func (o Options) WithDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.ItemConcurrency <= 0 {
		o.ItemConcurrency = DefaultItemConcurrency
	}
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Resync == 0 {
		o.Resync = DefaultResync
	}
	if o.OrphanGrace == 0 {
		o.OrphanGrace = DefaultOrphanGrace
	}
	if o.ClusterLabelsPoll == 0 {
		o.ClusterLabelsPoll = DefaultClusterLabelsPoll
	}
	o.ClusterScopedGraphs = slices.Clone(o.ClusterScopedGraphs)
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log
	}
	return o
}

// CallContext is ctx bounded by d, an Options.CallTimeout: a d of zero or
// less adds no bound.
func CallContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
