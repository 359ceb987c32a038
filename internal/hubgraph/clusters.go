package hubgraph

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// The instance engines reach each cluster through a handle
// (instance.Cluster) that they share: one per engagement of a cluster, so
// that their watches share one handler per metadata informer there. A
// cluster engaged anew under its name (it left the fleet and came back,
// or its credentials were rotated) gets a new handle, and the engines
// forget what they knew of the old one: their memory of applies, their
// owned children, their watches and those of their external references.
// The sweep finds such clusters every sweepEvery, as well as clusters that
// left, and has every graph forget them and reconcile again the instances
// that had children or references there; their next reconcile finds the
// cluster gone, or writes to its new engagement.

// sweepEvery is how often the handles of clusters that left or were
// engaged anew are swept.
const sweepEvery = DefaultFleetPoll

// clusterHandles are the handles given out, by cluster name ("" the hub).
type clusterHandles struct {
	mu sync.Mutex
	m  map[string]*instance.Cluster
}

// handle returns the handle of cl, engaged under name: the one given out
// before for the same engagement, else a new one.
func (r *Runtime) handle(name string, cl cluster.Cluster) *instance.Cluster {
	r.handles.mu.Lock()
	defer r.handles.mu.Unlock()
	if h := r.handles.m[name]; h != nil && h.Cluster == cl {
		return h
	}
	h := instance.NewCluster(name, cl)
	r.handles.m[name] = h
	return h
}

// reach finds the cluster called name now: the hub's own for "", else the
// engaged cluster of that name.
func (r *Runtime) reach(ctx context.Context, name string) instance.Reach {
	if name == "" {
		return instance.Reach{Name: name, Cluster: r.handle("", r.hub())}
	}
	cl, err := r.opts.Clusters.Cluster(ctx, name)
	if err != nil || cl == nil {
		if err == nil {
			err = fmt.Errorf("no such cluster")
		}
		return instance.Reach{Name: name, Err: fmt.Errorf("cluster %q is not engaged: %w", name, err)}
	}
	return instance.Reach{Name: name, Cluster: r.handle(name, cl)}
}

// sweep has every graph forget the clusters that left the fleet or were
// engaged anew since their handle was given out, and reconcile again the
// instances that had children or references there. A cluster engaged anew
// is also looked at for children of instances gone meanwhile.
func (r *Runtime) sweep() {
	ctx := r.ctx
	r.handles.mu.Lock()
	given := make(map[string]*instance.Cluster, len(r.handles.m))
	for name, h := range r.handles.m {
		if name != "" { // the hub's own never leaves
			given[name] = h
		}
	}
	r.handles.mu.Unlock()
	var gone []string
	var again []*instance.Cluster
	for name, h := range given {
		cl, err := r.opts.Clusters.Cluster(ctx, name)
		if err == nil && cl == h.Cluster {
			continue
		}
		r.handles.mu.Lock()
		if r.handles.m[name] == h {
			delete(r.handles.m, name)
		}
		r.handles.mu.Unlock()
		gone = append(gone, name)
		if err == nil && cl != nil {
			again = append(again, r.handle(name, cl))
		}
	}
	if len(gone) == 0 {
		return
	}
	r.mu.Lock()
	servers := make([]*server, 0, len(r.graphs))
	for _, s := range r.graphs {
		servers = append(servers, s)
	}
	r.mu.Unlock()
	for _, s := range servers {
		s.forgetClusters(gone, again)
	}
}

// forgetClusters has the graph's engine forget the clusters called gone,
// requeues the instances that had children or references there, and looks
// for orphans in the clusters engaged anew.
func (s *server) forgetClusters(gone []string, again []*instance.Cluster) {
	e := s.engine.Load()
	if e == nil {
		return
	}
	var keys []types.NamespacedName
	for _, name := range gone {
		keys = append(keys, e.ForgetCluster(name)...)
	}
	for _, key := range keys {
		s.enqueue(key)
	}
	for _, h := range again {
		e.FindOrphans(h)
	}
}
