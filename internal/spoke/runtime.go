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

	"github.com/fleetgraph/fleetgraph/sdk/graph"
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
// Each cluster serves exactly one version of a graph at a time. A graph
// given to Serve under a name already served replaces the previous version
// on a cluster only once its gate passes there; until then the previous
// version keeps serving that cluster (reconcile, drift repair, deletion), so
// an update one cluster refuses stops nothing there. See versions.go.
type Runtime struct {
	opts Options

	mu          sync.Mutex
	ctx         context.Context // set by Start; nil before
	clusters    map[multicluster.ClusterName]*engagement
	graphs      map[string]*graph.Graph
	controllers map[string]*controller // the latest version of each graph
	versions    map[string]*versions
	fallback    FallbackFunc
	serial      int
}

// engagement is one engaged cluster: the registry replayed to graphs served
// after the cluster arrived.
type engagement struct {
	name multicluster.ClusterName
	cl   cluster.Cluster
	ctx  context.Context
	// fan holds the handlers the graphs' members share on the cluster's
	// metadata informers (shared_handlers.go).
	fan *fanouts
}

// New returns a Runtime with opts' defaults filled in. It serves nothing until
// Start is called (a manager does that) and graphs are given to Serve.
func New(opts Options) *Runtime {
	return &Runtime{
		opts:        opts.withDefaults(),
		clusters:    map[multicluster.ClusterName]*engagement{},
		graphs:      map[string]*graph.Graph{},
		controllers: map[string]*controller{},
		versions:    map[string]*versions{},
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
	for name, g := range rt.graphs {
		c := rt.newControllerLocked(g)
		rt.controllers[name] = c
		started = append(started, c)
	}
	clusters := rt.clusterListLocked()
	rt.mu.Unlock()

	for _, c := range started {
		c.attachAll(clusters)
	}
	<-ctx.Done()

	rt.mu.Lock()
	var all []*controller
	for name, c := range rt.controllers {
		all = append(all, c)
		all = append(all, rt.versions[name].older...)
	}
	rt.controllers = map[string]*controller{}
	rt.versions = map[string]*versions{}
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
	rt.mu.Lock()
	if old, ok := rt.clusters[name]; ok && old.cl == cl && old.ctx.Err() == nil {
		rt.mu.Unlock()
		return nil
	}
	rt.clusters[name] = e
	controllers := rt.controllerListLocked()
	rt.mu.Unlock()

	context.AfterFunc(ctx, func() { rt.disengage(e) })
	for _, c := range controllers {
		c.attach(e)
	}
	return nil
}

func (rt *Runtime) disengage(e *engagement) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.clusters[e.name] == e {
		delete(rt.clusters, e.name)
	}
}

// Serve starts serving g on every engaged cluster, current and future. If a
// graph of the same name is served already, g replaces it cluster by
// cluster: on each cluster the previous version keeps serving until g's gate
// passes there, then stops, and g takes over its instances (children of
// nodes g no longer has are found by their labels and pruned). Serve does
// not wait for any cluster.
func (rt *Runtime) Serve(g *graph.Graph) error {
	if g == nil || g.Name == "" || g.Instance.GVK.Kind == "" {
		return fmt.Errorf("%w: a graph needs a name and an instance kind", ErrInvalidGraph)
	}
	rt.mu.Lock()
	rt.graphs[g.Name] = g
	if rt.ctx == nil {
		rt.mu.Unlock()
		return nil
	}
	old := rt.controllers[g.Name]
	c := rt.newControllerLocked(g)
	rt.controllers[g.Name] = c
	v := rt.versionsLocked(g.Name)
	if old != nil {
		v.older = append(v.older, old)
	}
	older := append([]*controller(nil), v.older...)
	clusters := rt.clusterListLocked()
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
	delete(rt.graphs, graphName)
	var all []*controller
	if c := rt.controllers[graphName]; c != nil {
		all = append(all, c)
	}
	if v := rt.versions[graphName]; v != nil {
		all = append(all, v.older...)
	}
	delete(rt.controllers, graphName)
	delete(rt.versions, graphName)
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

// Served returns, per cluster a version of the named graph serves, the
// Generation of that version. It lags the graph last given to Serve on a
// cluster where that one's gate has not passed: the previous version serves
// there meanwhile.
func (rt *Runtime) Served(graphName string) map[multicluster.ClusterName]int64 {
	return rt.servedBy(graphName, func(g *graph.Graph) int64 { return g.Generation })
}

// serving returns the latest version of the named graph and the version
// serving each cluster.
func (rt *Runtime) serving(graphName string) (*controller, map[multicluster.ClusterName]*controller) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var serving map[multicluster.ClusterName]*controller
	if v := rt.versions[graphName]; v != nil {
		serving = maps.Clone(v.serving)
	}
	return rt.controllers[graphName], serving
}

// Clusters returns the names of the clusters currently engaged, in no
// particular order.
func (rt *Runtime) Clusters() []multicluster.ClusterName {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]multicluster.ClusterName, 0, len(rt.clusters))
	for name := range rt.clusters {
		out = append(out, name)
	}
	return out
}

func (rt *Runtime) newControllerLocked(g *graph.Graph) *controller {
	rt.serial++
	name := fmt.Sprintf("fleetgraph-%s-%d-%d", g.Name, g.Generation, rt.serial)
	var c *controller
	opts := rt.opts
	inner := opts.Gate
	opts.Gate = func(ctx context.Context, cluster multicluster.ClusterName, g *graph.Graph) error {
		return rt.pass(ctx, c, cluster, inner)
	}
	c = newController(rt.ctx, name, g, opts)
	c.onEmpty = func() { rt.reap(c) }
	return c
}

func (rt *Runtime) clusterListLocked() []*engagement {
	out := make([]*engagement, 0, len(rt.clusters))
	for _, e := range rt.clusters {
		out = append(out, e)
	}
	return out
}

func (rt *Runtime) controllerListLocked() []*controller {
	out := make([]*controller, 0, len(rt.controllers))
	for _, c := range rt.controllers {
		out = append(out, c)
	}
	return out
}
