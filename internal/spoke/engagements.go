package spoke

import (
	"context"
	"sync"

	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// multicluster-runtime engages a runnable only with clusters that arrive
// after it was added, and graphs are served while the process runs: so the
// Runtime keeps its own registry of engaged clusters, and replays it to
// each graph version it starts.

// engagement is one engaged cluster.
type engagement struct {
	name multicluster.ClusterName
	// cl is the cluster as the instance engines reach it: it holds the
	// handlers the graphs' members share on its metadata informers.
	cl  *instance.Cluster
	ctx context.Context
}

// engagements is the registry of engaged clusters. Its methods are safe for
// concurrent use; it calls nothing while it holds its lock.
type engagements struct {
	mu     sync.Mutex
	byName map[multicluster.ClusterName]*engagement
}

func newEngagements() *engagements {
	return &engagements{byName: map[multicluster.ClusterName]*engagement{}}
}

// add records e, replacing what was engaged under its name, unless the
// same cluster is engaged there already with a live context: then it
// reports false and records nothing.
func (r *engagements) add(e *engagement) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.byName[e.name]; ok && old.cl.Cluster == e.cl.Cluster && old.ctx.Err() == nil {
		return false
	}
	r.byName[e.name] = e
	return true
}

// remove forgets e, unless another engagement replaced it meanwhile.
func (r *engagements) remove(e *engagement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName[e.name] == e {
		delete(r.byName, e.name)
	}
}

// get returns the engagement of the named cluster, nil if none.
func (r *engagements) get(name multicluster.ClusterName) *engagement {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byName[name]
}

// list returns every engagement, in no particular order.
func (r *engagements) list() []*engagement {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*engagement, 0, len(r.byName))
	for _, e := range r.byName {
		out = append(out, e)
	}
	return out
}

// names returns the engaged clusters' names, in no particular order.
func (r *engagements) names() []multicluster.ClusterName {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]multicluster.ClusterName, 0, len(r.byName))
	for name := range r.byName {
		out = append(out, name)
	}
	return out
}
