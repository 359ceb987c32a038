package spoke

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

var (
	_ multicluster.Aware = &Runtime{}
	_ manager.Runnable   = &Runtime{}
)

// ErrInvalidGraph is returned by Serve for a graph it cannot run.
var ErrInvalidGraph = errors.New("spoke: invalid graph")

// Count is how many instances of a graph one cluster holds, as the
// cluster's instance cache shows them: right as soon as the instance watch
// has its initial list, whether or not they were reconciled since the
// process started (counts.go).
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
	// InError is the number of instances whose status.state is ERROR,
	// as the cache shows them (as Ready counts ACTIVE ones).
	InError int
	// Counted reports that the instance watch has listed the cluster's
	// instances: until then every count is zero, whatever the cluster
	// holds.
	Counted bool
}

// Runtime serves compiled graphs on every engaged cluster. Its methods are
// safe for concurrent use, before and after Start.
//
// Clusters come in through Engage (a multicluster-runtime manager calls it
// when the Runtime was added with mcmanager's Add; in single-cluster mode the
// caller engages the local cluster under the empty name). Graphs come in
// through Serve and go with Stop. Each graph is served on each engaged
// cluster, once Options.Gate allows it, until the cluster's engagement
// context is cancelled, the graph is stopped, or Start returns.
//
// Each cluster serves exactly one version of a graph at a time. A version
// given to Serve under a name already served replaces the previous version
// on a cluster only once its gate passes there; until then the previous
// version keeps serving that cluster (reconcile, drift repair, deletion), so
// an update one cluster refuses stops nothing there. See versions.go.
type Runtime struct {
	opts     Options
	clusters *engagements

	mu       sync.Mutex
	ctx      context.Context // set by Start; nil before
	graphs   map[string]*graphVersions
	fallback FallbackFunc
	serial   int
}

// New returns a Runtime with opts' defaults filled in. It serves nothing until
// Start is called (a manager does that) and graphs are given to Serve.
func New(opts Options) *Runtime {
	return &Runtime{
		opts:     opts.withDefaults(),
		clusters: newEngagements(),
		graphs:   map[string]*graphVersions{},
	}
}

// Start runs the Runtime until ctx is cancelled, then stops every graph's
// workers and waits for them. It implements manager.Runnable.
func (rt *Runtime) Start(ctx context.Context) error {
	rt.mu.Lock()
	if rt.ctx != nil {
		rt.mu.Unlock()
		return errors.New("spoke: Runtime started twice")
	}
	rt.ctx = ctx
	var started []*controller
	for _, gv := range rt.graphs {
		gv.current = rt.newControllerLocked(gv.latest)
		started = append(started, gv.current)
	}
	clusters := rt.clusters.list()
	rt.mu.Unlock()

	for _, c := range started {
		c.attachAll(clusters)
	}
	<-ctx.Done()

	rt.mu.Lock()
	var all []*controller
	for _, gv := range rt.graphs {
		all = append(all, gv.controllers()...)
		gv.current, gv.older, gv.serving = nil, nil, map[multicluster.ClusterName]*controller{}
	}
	rt.mu.Unlock()
	for _, c := range all {
		c.stop()
	}
	return nil
}

// Engage starts serving every graph on cl, under name, until ctx is
// cancelled. It returns at once: the per-graph work for the cluster runs in
// goroutines of its own. Engaging the same cluster again with a live context
// is a no-op; engaging a different cluster under the same name replaces it.
// It implements multicluster.Aware.
func (rt *Runtime) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	e := &engagement{name: name, cl: cl, ctx: ctx, fan: newFanouts()}
	if !rt.clusters.add(e) {
		return nil
	}
	rt.mu.Lock()
	controllers := rt.controllerListLocked()
	rt.mu.Unlock()

	context.AfterFunc(ctx, func() { rt.clusters.remove(e) })
	for _, c := range controllers {
		c.attach(e)
	}
	return nil
}

// Serve starts serving v on every engaged cluster, current and future. If a
// graph of the same name is served already, v replaces it cluster by
// cluster: on each cluster the previous version keeps serving until v's gate
// passes there, then stops, and v takes over its instances (children of
// nodes v's graph no longer has are found by their labels and pruned).
// Serve does not wait for any cluster.
func (rt *Runtime) Serve(v Version) error {
	g := v.Graph
	if g == nil || g.Name == "" || g.Instance.GVK.Kind == "" {
		return fmt.Errorf("%w: a graph needs a name and an instance kind", ErrInvalidGraph)
	}
	rt.mu.Lock()
	gv := rt.graphs[g.Name]
	if gv == nil {
		gv = newGraphVersions()
		rt.graphs[g.Name] = gv
	}
	gv.latest = v
	if rt.ctx == nil {
		rt.mu.Unlock()
		return nil
	}
	if gv.current != nil {
		gv.older = append(gv.older, gv.current)
	}
	c := rt.newControllerLocked(v)
	gv.current = c
	older := append([]*controller(nil), gv.older...)
	clusters := rt.clusters.list()
	rt.mu.Unlock()

	for _, o := range older {
		rt.dropUnserved(g.Name, o)
	}
	c.attachAll(clusters)
	return nil
}

// Stop stops serving the named graph everywhere, every version of it, and
// waits for their workers. Children and instances are left as they are.
// Stopping an unknown graph is a no-op.
func (rt *Runtime) Stop(graphName string) {
	rt.mu.Lock()
	var all []*controller
	if gv := rt.graphs[graphName]; gv != nil {
		all = gv.controllers()
	}
	delete(rt.graphs, graphName)
	rt.mu.Unlock()
	for _, c := range all {
		c.stop()
	}
}

// Counts returns, per cluster the named graph is attached to, how many
// instances it holds and how many of them are ACTIVE, as counted by the
// version serving the cluster. It is nil for a graph not served.
func (rt *Runtime) Counts(graphName string) map[multicluster.ClusterName]Count {
	c, serving := rt.serving(graphName)
	if c == nil {
		return nil
	}
	out := c.counts()
	for name, sc := range serving {
		if m := sc.member(name); m != nil {
			out[name] = m.count()
		}
	}
	return out
}

// Served returns, per cluster a version of the named graph serves, that
// version. It lags the version last given to Serve on a cluster where that
// one's gate has not passed: the previous version serves there meanwhile.
func (rt *Runtime) Served(graphName string) map[multicluster.ClusterName]Version {
	_, serving := rt.serving(graphName)
	out := make(map[multicluster.ClusterName]Version, len(serving))
	for name, sc := range serving {
		if sc.member(name) != nil {
			out[name] = sc.v
		}
	}
	return out
}

// Latest returns the version last given to Serve under name; its Graph is
// nil if there is none.
func (rt *Runtime) Latest(graphName string) Version {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if gv := rt.graphs[graphName]; gv != nil {
		return gv.latest
	}
	return Version{}
}

// serving returns the latest version of the named graph and the version
// serving each cluster.
func (rt *Runtime) serving(graphName string) (*controller, map[multicluster.ClusterName]*controller) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	gv := rt.graphs[graphName]
	if gv == nil {
		return nil, nil
	}
	return gv.current, maps.Clone(gv.serving)
}

// Clusters returns the names of the clusters currently engaged, in no
// particular order.
func (rt *Runtime) Clusters() []multicluster.ClusterName {
	return rt.clusters.names()
}

// SetWorkers sets Options.Workers for the graph versions served from now
// on; versions already served keep their workers. It lets the hub take the
// count from its manager's controller options, which it learns after New.
// n <= 0 is ignored.
func (rt *Runtime) SetWorkers(n int) {
	if n <= 0 {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.opts.Workers = n
}

// Workers returns the Options.Workers that newly served graph versions get.
func (rt *Runtime) Workers() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.opts.Workers
}

func (rt *Runtime) newControllerLocked(v Version) *controller {
	rt.serial++
	name := fmt.Sprintf("fleetgraph-%s-%d-%d", v.Graph.Name, v.Graph.Generation, rt.serial)
	var c *controller
	opts := rt.opts
	inner := opts.Gate
	opts.Gate = func(ctx context.Context, cluster multicluster.ClusterName, _ Version) error {
		return rt.pass(ctx, c, cluster, inner)
	}
	c = newController(rt.ctx, name, v, opts)
	c.onEmpty = func() { rt.reap(c) }
	return c
}

func (rt *Runtime) controllerListLocked() []*controller {
	out := make([]*controller, 0, len(rt.graphs))
	for _, gv := range rt.graphs {
		if gv.current != nil {
			out = append(out, gv.current)
		}
	}
	return out
}
