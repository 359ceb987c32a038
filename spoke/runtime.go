package spoke

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	internal "github.com/fleetgraph/fleetgraph/internal/spoke"
)

var (
	_ multicluster.Aware = &Runtime{}
	_ manager.Runnable   = &Runtime{}
)

// ErrInvalidGraph is returned (wrapped) by Serve for a version it cannot
// run: no graph, or one without a name or an instance kind.
var ErrInvalidGraph = errors.New("spoke: invalid graph")

// Count is how many instances of a graph one cluster holds, as the
// cluster's instance cache shows them: right as soon as the instance watch
// has its initial list, whether or not they were reconciled since the
// process started.
type Count struct {
	// Total is the number of instances in the cache.
	Total int
	// Ready is the number of those whose status.state is ACTIVE.
	Ready int
	// Confirmed is the number of instances that the version serving the
	// cluster has itself reconciled to ACTIVE, last time it reconciled
	// them. A state an earlier version wrote does not count, nor does one
	// that could not be written: a rollout's health gate reads this, not
	// Ready.
	Confirmed int
	// Errors is the number of instances that the version serving the
	// cluster has itself reconciled to ERROR, last time it reconciled
	// them, whether or not it could write that state.
	Errors int
	// Reconciled is the number of instances that the version serving the
	// cluster has itself reconciled, in whatever state it left them: until
	// it equals Total, Confirmed and Errors judge only some of them.
	Reconciled int
	// InError is the number of instances whose status.state is ERROR,
	// as the cache shows them (as Ready counts ACTIVE ones).
	InError int
	// Counted reports that the instance watch has listed the cluster's
	// instances: until then every count is zero, whatever the cluster
	// holds.
	Counted bool
}

// Runtime serves compiled graphs on every cluster it is given. Its methods
// are safe for concurrent use, before and after Start.
//
// Clusters come in through Engage: a multicluster-runtime manager calls it
// for each cluster its provider engages when the Runtime was added with
// its Add; SetupWithManager engages a controller-runtime manager's own
// cluster. Graphs come in through Serve and go with Stop. Each version is
// served on each engaged cluster, once its gate (SetGate) allows it, until the
// cluster's engagement context is cancelled, the graph is stopped, or
// Start returns.
//
// Each cluster serves exactly one version of a graph at a time. A version
// given to Serve under a name already served replaces the previous one on
// a cluster only once its gate passes there; until then the previous
// version keeps serving that cluster (reconcile, drift repair, deletion),
// so an update one cluster refuses stops nothing there.
type Runtime struct {
	rt *internal.Runtime
}

// New returns a Runtime with opts' defaults filled in. It serves nothing
// until it is started (a manager does that) and given graphs.
func New(opts Options) *Runtime {
	return &Runtime{rt: internal.New(opts.runtimeConfig())}
}

// CRDLost tells the runtime that the named graph's CRD went away on the
// cluster, as whoever keeps the CRD there saw it (hub.FanOut's
// OnTransition to CRDMissing): deleted, or lost with the cluster's
// storage. The instance watch there may not notice by itself (the CRD
// may be back before it lists again, or the server's resourceVersions
// went back in time), so it is replaced with one that lists afresh once
// the kind is served again, and Counts reports the cluster uncounted
// meanwhile. Safe for concurrent use; a graph or cluster not served is
// ignored.
func (r *Runtime) CRDLost(graph string, cluster multicluster.ClusterName) {
	r.rt.CRDLost(graph, cluster)
}

// SetGate sets the gate consulted before a version's watches start on a
// cluster, e.g. until the caller has established the graph's CRD there.
// Call it before Start. Defaults to none: the watch on instances is
// retried with backoff until the kind is served.
func (r *Runtime) SetGate(gate GateFunc) {
	if gate == nil {
		r.rt.SetGate(nil)
		return
	}
	r.rt.SetGate(func(ctx context.Context, cluster multicluster.ClusterName, v internal.Version) error {
		return gate(ctx, cluster, versionOf(v))
	})
}

// SetupWithManager adds r to mgr, serving mgr's own cluster: the idiom of
// an agent that runs inside the cluster it serves. The cluster is engaged
// under the empty name (mcmanager.LocalCluster) when mgr starts, and r
// stops with mgr. With a multicluster-runtime manager, add r with its Add
// instead: it then serves the provider's clusters.
func (r *Runtime) SetupWithManager(mgr manager.Manager) error {
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("adding the spoke runtime: %w", err)
	}
	engage := manager.RunnableFunc(func(ctx context.Context) error {
		if err := r.Engage(ctx, mcmanager.LocalCluster, mgr); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
	if err := mgr.Add(engage); err != nil {
		return fmt.Errorf("engaging the manager's cluster: %w", err)
	}
	return nil
}

// Start runs the Runtime until ctx is cancelled, then stops every graph's
// workers and waits for them. It implements manager.Runnable; a Runtime is
// started once.
func (r *Runtime) Start(ctx context.Context) error { return r.rt.Start(ctx) }

// Engage starts serving every graph on cl, under name, until ctx is
// cancelled. It returns at once: the work for the cluster runs in
// goroutines of its own, so a slow or hung cluster delays only itself.
// Engaging the same cluster again with a live context is a no-op; engaging
// a different cluster under the same name replaces it. It implements
// multicluster.Aware.
func (r *Runtime) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	return r.rt.Engage(ctx, name, cl)
}

// Serve starts serving v on every engaged cluster, current and future,
// before or after Start. If a graph of the same name is served already, v
// replaces it cluster by cluster: on each cluster the previous version
// keeps serving until v's gate passes there, then stops, and v takes over
// its instances (children of resources v's graph no longer has are found
// by their labels and pruned). Serve does not wait for any cluster.
func (r *Runtime) Serve(v Version) error {
	err := r.rt.Serve(v.runtimeVersion())
	if errors.Is(err, internal.ErrInvalidGraph) {
		return fmt.Errorf("%w: a graph needs a name and an instance kind", ErrInvalidGraph)
	}
	return err
}

// Stop stops serving the named graph everywhere, every version of it, and
// waits for their workers. Instances and children are left as they are
// (with the runtime's finalizer: serve the graph with RemovalRelease first
// to take it off). Stopping an unknown graph is a no-op.
func (r *Runtime) Stop(graphName string) { r.rt.Stop(graphName) }

// Counts returns, per cluster the named graph is served on, how many
// instances it holds and how many of them are ACTIVE. It is nil for a
// graph not served.
func (r *Runtime) Counts(graphName string) map[multicluster.ClusterName]Count {
	in := r.rt.Counts(graphName)
	if in == nil {
		return nil
	}
	out := make(map[multicluster.ClusterName]Count, len(in))
	for name, c := range in {
		out[name] = Count(c)
	}
	return out
}

// Served returns, per cluster a version of the named graph serves, that
// version. It lags the version last given to Serve on a cluster where that
// one's gate has not passed: the previous version serves there meanwhile.
func (r *Runtime) Served(graphName string) map[multicluster.ClusterName]Version {
	in := r.rt.Served(graphName)
	out := make(map[multicluster.ClusterName]Version, len(in))
	for name, v := range in {
		out[name] = versionOf(v)
	}
	return out
}

// Latest returns the version last given to Serve under graphName; its
// Graph is nil if there is none.
func (r *Runtime) Latest(graphName string) Version { return versionOf(r.rt.Latest(graphName)) }

// Reconsider makes the Runtime decide again which version of the named
// graph serves the named cluster, after what the gate decides there
// changed. The version serving the cluster is retired when keep refuses
// it, waiting for its in-flight reconciles; then, unless the latest
// version serves the cluster, its gate there is tried again at once
// instead of at the end of its backoff. Unknown graphs and clusters are a
// no-op.
func (r *Runtime) Reconsider(graphName string, cluster multicluster.ClusterName, keep func(Version) bool) {
	r.rt.Reconsider(graphName, cluster, func(v internal.Version) bool { return keep(versionOf(v)) })
}

// SetFallback sets the function that finds the version to serve on a
// cluster the latest version cannot take yet. Call it before Start.
// Defaults to none: such a cluster is not served until the gate passes.
func (r *Runtime) SetFallback(f FallbackFunc) {
	if f == nil {
		r.rt.SetFallback(nil)
		return
	}
	r.rt.SetFallback(func(ctx context.Context, cluster multicluster.ClusterName, latest internal.Version) (internal.Version, error) {
		v, err := f(ctx, cluster, versionOf(latest))
		return v.runtimeVersion(), err
	})
}

// Clusters returns the names of the clusters currently engaged, in no
// particular order.
func (r *Runtime) Clusters() []multicluster.ClusterName { return r.rt.Clusters() }

// ClusterValuesChanged tells the Runtime that the values
// Options.ClusterValues gives may have changed on the named clusters (on
// every engaged cluster when none is named). Each graph that reads
// cluster.values asks for its values there again, and reconciles its
// instances on a cluster again only when its values there did change. It
// does not wait for the reconciles, and is safe for concurrent use.
func (r *Runtime) ClusterValuesChanged(clusters ...multicluster.ClusterName) {
	r.rt.ClusterValuesChanged(clusters...)
}

// ClusterLabelsChanged tells the Runtime that the labels
// Options.ClusterLabels gives changed on the named clusters (on every
// engaged cluster when none is named), so that graphs that read
// cluster.labels, or cluster.values, follow at once rather than at the next
// ClusterLabelsPoll. The sdk's Hub calls it for providers that implement
// hub.ClusterLabelNotifier. It does not wait for the reconciles, and is
// safe for concurrent use.
func (r *Runtime) ClusterLabelsChanged(clusters ...multicluster.ClusterName) {
	r.rt.ClusterLabelsChanged(clusters...)
}

// SetWorkers sets Options.Workers for the versions served from now on;
// versions already served keep their workers. It is for a caller that
// learns the count after New (from its manager's controller options, say).
// n <= 0 is ignored.
func (r *Runtime) SetWorkers(n int) { r.rt.SetWorkers(n) }

// Workers returns the Options.Workers that newly served versions get.
func (r *Runtime) Workers() int { return r.rt.Workers() }

// versionOf is the public form of a version of the runtime's plumbing.
func versionOf(v internal.Version) Version {
	return Version{Graph: v.Graph, Revision: v.Revision, Removal: RemovalMode(v.Removal)}
}

// runtimeVersion is v for the runtime's plumbing.
func (v Version) runtimeVersion() internal.Version {
	return internal.Version{Graph: v.Graph, Revision: v.Revision, Removal: internal.RemovalMode(v.Removal)}
}

// InstanceStates returns, for each instance of the named graph on the
// named cluster that the version serving the cluster has reconciled, the
// state (status.state) it last reconciled it to, whether or not it could
// write it: what that version itself found, never what an earlier one
// wrote. It is nil when no version serves the cluster.
func (r *Runtime) InstanceStates(graphName string, cluster multicluster.ClusterName) map[types.NamespacedName]string {
	return r.rt.InstanceStates(graphName, cluster)
}
