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

	"github.com/fleetgraph/fleetgraph/internal/instance"
)

var (
	_ multicluster.Aware = &Runtime{}
	_ manager.Runnable   = &Runtime{}
)

// ErrInvalidGraph is returned by Serve for a graph it cannot run.
var ErrInvalidGraph = errors.New("spoke: invalid graph")

// Count is the public spoke.Count, which converts to it: its fields are
// kept from the instance handler's events (Total, Ready: counts.go) and
// from each member's instance states (Confirmed, Errors, Reconciled:
// states.go).
// Counted says the instance watch has listed the cluster's instances.
type Count struct {
	Total, Ready      int
	Confirmed, Errors int
	Reconciled        int
	InError           int
	Counted           bool
}

// Runtime is the public spoke.Runtime's plumbing (its documentation is the
// contract): a registry of engagements (engagements.go) and, per graph,
// its versions and the controller of each (versions.go), each controller
// attaching one member per engaged cluster. Its lock guards the graphs;
// nothing holding it waits for a cluster.
type Runtime struct {
	opts     Config
	clusters *engagements

	mu       sync.Mutex
	ctx      context.Context // set by Start; nil before
	graphs   map[string]*graphVersions
	fallback FallbackFunc
	serial   int
}

// New returns a Runtime with opts' defaults filled in.
func New(opts Config) *Runtime {
	return &Runtime{
		opts:     opts.withDefaults(),
		clusters: newEngagements(),
		graphs:   map[string]*graphVersions{},
	}
}

// Start starts the controller of every graph served so far on the clusters
// engaged so far; once ctx ends it stops every controller, which waits for
// its workers.
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

// Engage records the engagement, which ends with ctx, and attaches every
// current controller to it; each attachment starts its member in a
// goroutine of its own.
func (rt *Runtime) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	e := &engagement{name: name, cl: instance.NewCluster(string(name), cl), ctx: ctx}
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

// Serve makes v the graph's latest version: a new controller, attached to
// every engaged cluster, whose gate (pass, versions.go) switches each
// cluster over from the older controllers, which are dropped once they
// serve no cluster.
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

// Stop forgets the graph and stops every controller of it.
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

// Counts asks the member of the controller serving each cluster (the
// latest one's where none has switched over yet) for its count.
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

// CRDLost tells the runtime that the named graph's CRD went away on the
// cluster (deleted, or lost with the cluster's storage): the member that
// serves it there counts no instance until its instance watch has been
// replaced with one listing afresh, once the kind is served again.
func (rt *Runtime) CRDLost(graphName string, cluster multicluster.ClusterName) {
	_, serving := rt.serving(graphName)
	if sc := serving[cluster]; sc != nil {
		if m := sc.member(cluster); m != nil {
			m.crd.lost()
		}
	}
}

// Served is the version of the controller recorded as serving each
// cluster whose member is live.
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

// Latest is the version last given to Serve under graphName.
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

// Clusters lists the engagements.
func (rt *Runtime) Clusters() []multicluster.ClusterName {
	return rt.clusters.names()
}

// SetWorkers sets Options.Workers for the controllers made from now on;
// n <= 0 is ignored.
func (rt *Runtime) SetWorkers(n int) {
	if n <= 0 {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.opts.Workers = n
}

// SetGate sets Config.Gate for the graph versions served from now on.
// Call it before Start.
func (rt *Runtime) SetGate(gate GateFunc) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.opts.Gate = gate
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
