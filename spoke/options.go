package spoke

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/instance"
	internal "github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// The defaults of Options' fields. Each is declared once, where it is
// filled in (the instance engine's defaults, the API's field manager): the
// drivers and the sdk read the same constants. The comments give the
// values.
const (
	// DefaultWorkers is how many instances of one graph are reconciled at
	// once, across all clusters: 8.
	DefaultWorkers = instance.DefaultWorkers
	// DefaultItemConcurrency is how many items of one forEach one reconcile
	// applies at once: 8.
	DefaultItemConcurrency = instance.DefaultItemConcurrency
	// DefaultFieldManager is the field manager of every write:
	// "fleetgraph", the hub's too.
	DefaultFieldManager = v1alpha1.FieldManager
	// DefaultCallTimeout bounds each call to a cluster's API server: 30
	// seconds.
	DefaultCallTimeout = instance.DefaultCallTimeout
	// DefaultResync is how often every child of an instance is applied
	// again even if nothing reported a change: 10 minutes.
	DefaultResync = instance.DefaultResync
	// DefaultClusterLabelsPoll is how often, by default, the labels of a
	// cluster are asked again for graphs that read cluster.labels: 2
	// seconds.
	DefaultClusterLabelsPoll = instance.DefaultClusterLabelsPoll
	// DefaultOrphanGrace is how long a child whose instance is gone is left
	// before it is deleted: 30 seconds.
	DefaultOrphanGrace = instance.DefaultOrphanGrace
)

// GateFunc decides whether a version of a graph may be served on a cluster
// yet, e.g. once its CRD is established there (see Runtime.SetGate). It is
// called in a goroutine of its own for each (version, cluster) pair, with a
// context that ends when the cluster is disengaged or the version is
// replaced or stopped; it may block. A nil error opens the gate; an error is logged and the call
// is retried with backoff (doubling from 200ms up to 30s).
type GateFunc func(ctx context.Context, cluster multicluster.ClusterName, v Version) error

// FallbackFunc finds the version of a graph a cluster served before, for a
// cluster that the latest version cannot be served on yet (its gate has
// not passed) and that no version serves, typically right after the
// process restarted. It returns a Version with a nil Graph, and no error,
// when there is none. The graph it returns must have been compiled from an
// earlier spec of the same graph, whose CRD is the one on the cluster: it
// is served there without passing the gate, until latest's gate passes.
type FallbackFunc func(ctx context.Context, cluster multicluster.ClusterName, latest Version) (Version, error)

// Options configures a Runtime. The zero value is usable: every field says
// its default, and New fills them in. The sdk's Hub serves every graph's
// instances with these options too (sdk.Options.Instances, which says
// what the Hub sets itself).
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
	// ItemConcurrency is how many children of one forEach resource one
	// reconcile applies at once. Defaults to DefaultItemConcurrency; 1
	// applies them one after another.
	ItemConcurrency int
	// CallTimeout bounds each call a reconcile makes to a cluster (reads,
	// applies, patches, deletes, lists) and how long it waits for a new
	// watch's initial list (which goes on in the background). A call that
	// times out fails the reconcile, which is retried with backoff.
	// Defaults to DefaultCallTimeout; a negative value means no timeout.
	CallTimeout time.Duration
	// FieldManager is the field manager of every write: server-side apply
	// of children, and patches of instances. Only children it wrote are
	// collected as orphans. Defaults to DefaultFieldManager.
	FieldManager string
	// Resync is the period of each instance's full resync: every child is
	// applied again, even one the Runtime believes unchanged, which puts
	// back drift that no watch event reported. Each instance's period is
	// lengthened by a random part of up to a fifth, so that instances do
	// not resync together. Defaults to DefaultResync; a negative value
	// turns the resync off.
	Resync time.Duration
	// AdoptUnowned lets an instance take over an existing object that has
	// a child's name and no fleetgraph owner label: the object is applied
	// to, labelled as the instance's child, and later pruned or deleted
	// with it. Defaults to false: such an object is left alone and the
	// instance goes to ERROR naming it (reason OwnershipConflict). An
	// object labelled for another instance is never taken over.
	AdoptUnowned bool
	// ConfineToNamespace keeps each instance's children and external
	// references in the instance's namespace: a child rendered in another
	// namespace, or of a cluster-scoped kind, is not written; an
	// externalRef naming another namespace or a cluster-scoped kind is not
	// read, and one by selector without a namespace selects (and watches)
	// in the instance's namespace only. The children and references of a
	// cluster-scoped instance are all refused, unless its graph is one of
	// ClusterScopedGraphs. A refused instance goes to ERROR (reason
	// OutsideNamespace) naming the resource id and the object. Defaults to
	// false, as kro: templates and references may use any namespace.
	ConfineToNamespace bool
	// ClusterScopedGraphs names the graphs (RGD names) whose cluster-scoped
	// instances ConfineToNamespace lets through: graphs the platform
	// trusts, such as one that sets up a tenant's namespace, run unconfined
	// as in kro. List only graphs tenants cannot write. Defaults to none.
	// Without ConfineToNamespace it has no effect.
	ClusterScopedGraphs []string
	// OrphanGrace is how long a child whose owning instance no longer
	// exists (its finalizer was removed by hand, say) is left before the
	// Runtime deletes it. Only children labelled as the graph's and written
	// by FieldManager are deleted, once a live read confirms that no
	// instance has their owner's UID; children left on purpose (a
	// RemovalRelease) are not. Defaults to DefaultOrphanGrace; a negative
	// value turns the collection off.
	OrphanGrace time.Duration
	// ClusterLabels gives the labels of a cluster to the expressions of
	// graphs that read cluster.labels (see graph.ClusterLabels); the
	// cluster variable's name is the name the cluster is engaged under
	// (LocalClusterName for a manager's own cluster). It is called once
	// per reconcile
	// of such a graph's instance, so it must be quick and safe for
	// concurrent use. Defaults to nil: every cluster has no labels.
	ClusterLabels func(multicluster.ClusterName) map[string]string
	// ClusterLabelsPoll is how often ClusterLabels is asked again, on each
	// cluster, for graphs that read cluster.labels: when a cluster's labels
	// changed, every instance of such a graph there is reconciled again
	// (children an includeWhen now excludes are pruned). Graphs that do not
	// read labels are never asked about nor requeued. Defaults to
	// DefaultClusterLabelsPoll; a negative value turns the polling off.
	ClusterLabelsPoll time.Duration
	// ClusterValues gives the values the platform gives the named graph
	// (RGD name) on a cluster, for graphs whose expressions read
	// cluster.values (see graph.ClusterValues); nil means none. Values are
	// JSON as k8s.io/apimachinery/pkg/util/json decodes it. It is called
	// once per reconcile of such a graph's instance, so it must be quick
	// and safe for concurrent use; the map it returns is only read, and
	// may be shared. When values may have changed, call
	// Runtime.ClusterValuesChanged: only the graphs whose values did change
	// reconcile their instances again, and only on those clusters. They
	// are asked again too when a cluster's labels change (see
	// ClusterLabelsPoll). Defaults to nil: no values. The sdk's Hub sets it
	// from the hub's ClusterValues objects.
	ClusterValues func(cluster multicluster.ClusterName, graphName string) map[string]any
	// LocalClusterName is what cluster.name holds in graphs served on the
	// cluster engaged as "" (a manager's own, as in the sdk's
	// single-cluster mode). Defaults to "". The sdk's Hub sets it from its
	// Options.Fleet.LocalClusterName.
	LocalClusterName string
	// CountsChanged, if set, is told the graph's name whenever the
	// instance counts of the graph on some cluster (Runtime.Counts)
	// change, so that what shows them can follow at once. It is called
	// from informer event handlers: it must be quick and must not block.
	// Defaults to nil.
	CountsChanged func(graphName string)
	// Logger is the logger. Defaults to controller-runtime's log.Log named
	// "spoke".
	Logger logr.Logger
}

// runtimeConfig is o for the runtime's plumbing, which fills in the
// defaults. The conversion is what keeps Options equal to the engine's
// list of options: a field added to one and not the other does not
// compile.
func (o Options) runtimeConfig() internal.Config {
	return internal.Config{Options: instance.Options(o)}
}
