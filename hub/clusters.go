package hub

import (
	"context"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// Cluster is an engaged cluster, as a FanOut knows it.
type Cluster struct {
	// Name is the provider's name for the cluster ("" for a manager's own
	// cluster in single-cluster mode).
	Name string
	// Cluster reaches the cluster.
	Cluster cluster.Cluster
	// Engagement ends when the cluster leaves. Work that goes on after an
	// attempt returns (binding the admission policy once it is safe) is
	// bound to it; nil means the attempt's own context.
	Engagement context.Context
}

// engagements are the clusters engaged now, by name.
type engagements struct {
	mu sync.Mutex
	m  map[string]*Cluster
}

// add records c, replacing an engagement of the same name, and reports
// whether it replaced one.
func (e *engagements) add(c *Cluster) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]*Cluster{}
	}
	_, replaced := e.m[c.Name]
	e.m[c.Name] = c
	return replaced
}

// remove forgets c and reports whether it was still the engagement of its
// name.
func (e *engagements) remove(c *Cluster) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m[c.Name] != c {
		return false
	}
	delete(e.m, c.Name)
	return true
}

func (e *engagements) get(name string) (Cluster, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.m[name]
	if !ok {
		return Cluster{}, false
	}
	return *c, true
}

func (e *engagements) list() []Cluster {
	e.mu.Lock()
	out := make([]Cluster, 0, len(e.m))
	for _, c := range e.m {
		out = append(out, *c)
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Engage implements multicluster.Aware: cl is known by name until ctx
// ends, every graph's status lists it, and every graph given to Serve is
// fanned out to it. It returns at once.
func (f *FanOut) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	c := &Cluster{Name: string(name), Cluster: cl, Engagement: ctx}
	if !f.clusters.add(c) {
		clusterEngaged(true)
	}
	f.tracker.engaged(c.Name)
	f.served.engage(f, *c) // serve.go
	context.AfterFunc(ctx, func() { f.leave(c) })
	return nil
}

// leave forgets c once its engagement ended, unless it was engaged again.
func (f *FanOut) leave(c *Cluster) {
	if !f.clusters.remove(c) {
		return
	}
	clusterEngaged(false)
	f.tracker.dropCluster(c.Name)
	forgetClusterSeries(c.Name)
	f.admission.fence.forget(c.Name)
	f.repairs.forgetCluster(c) // repair.go
	if f.opts.OnLeave != nil {
		f.opts.OnLeave(*c)
	}
}

// Cluster returns the engaged cluster called name.
func (f *FanOut) Cluster(name string) (Cluster, bool) {
	return f.clusters.get(name)
}

// Clusters returns the engaged clusters, sorted by name.
func (f *FanOut) Clusters() []Cluster {
	return f.clusters.list()
}
