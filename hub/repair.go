package hub

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// This file keeps what the FanOut put on a cluster there. Once an Ensure
// has made a graph's CRD established on a cluster, the FanOut remembers
// the graph there and watches, once per API server (repair_watch.go), the
// CRDs and admission policies it labels as its own. When one of the kept
// graphs' objects is deleted (by hand, by another controller, or lost
// with the server's storage), the graph is marked not established there at
// once, and Ensure runs again, with backoff, until it succeeds: the CRD
// comes back within seconds, not at the next resync.
//
// A graph is kept on a cluster until its admission policy is removed there
// (RemoveAdmission: a removal, a departure, a placement release), the
// graph is stopped (Stop) or the cluster leaves. An Ensure that began
// before a removal does not keep the graph again (admission_fence.go). A
// newer version of the graph, once established, replaces the kept one and
// stops its repair.

// objectKind is a kind of object the FanOut keeps on a cluster.
type objectKind int

const (
	kindCRD objectKind = iota
	kindPolicy
	kindBinding
)

func (k objectKind) String() string {
	return [...]string{"CustomResourceDefinition", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}[k]
}

// repairs are the graphs kept on each cluster, and a watcher per server.
type repairs struct {
	mu       sync.Mutex
	clusters map[string]*keptCluster // by cluster name
	watchers map[string]*watcher     // by server (serverOf)
}

// keptCluster is one engaged cluster with the graphs kept there.
type keptCluster struct {
	c      Cluster
	server string
	graphs map[string]*keptGraph // by graph name
}

// keptGraph is one graph kept on one cluster, and its repair in flight.
type keptGraph struct {
	g      Graph
	repair *repairRun
}

// repairRun is one repair loop; kick asks it for one more attempt.
type repairRun struct {
	cancel context.CancelFunc
	kick   chan struct{}
}

// owns reports whether the object of that kind and name is one of g's.
func (g Graph) owns(kind objectKind, name string) bool {
	switch kind {
	case kindCRD:
		return g.CRD.Name == name
	case kindPolicy:
		return g.Admission != nil && g.Admission.Policy.GetName() == name
	case kindBinding:
		return g.Admission != nil && g.Admission.Binding.GetName() == name
	}
	return false
}

// sameVersion reports whether a and b are one version of a graph (see
// Graph.CRD: a new spec is a new object).
func sameVersion(a, b Graph) bool { return a.CRD == b.CRD && a.Revision == b.Revision }

// keep remembers g on c after an Ensure holding ticket made it
// established there, unless its admission policy was removed from c since
// that Ensure began, and watches c's server for the deletion of its
// objects.
func (f *FanOut) keep(c Cluster, g Graph, ticket uint64) {
	r := &f.repairs
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.admission.fence.removedSince(fenceKey{cluster: c.Name, graph: g.Name}, ticket) {
		return
	}
	if _, engaged := f.clusters.get(c.Name); !engaged {
		return
	}
	kc := r.clusters[c.Name]
	if kc == nil || kc.c.Cluster != c.Cluster {
		if kc != nil {
			r.dropLocked(kc)
		}
		kc = &keptCluster{c: c, server: serverOf(c), graphs: map[string]*keptGraph{}}
		if r.clusters == nil {
			r.clusters = map[string]*keptCluster{}
		}
		r.clusters[c.Name] = kc
	}
	if kg := kc.graphs[g.Name]; kg != nil {
		if !sameVersion(kg.g, g) && kg.repair != nil {
			kg.repair.cancel() // it would put the older version back
			kg.repair = nil
		}
		kg.g = g
	} else {
		kc.graphs[g.Name] = &keptGraph{g: g}
	}
	w := r.watchers[kc.server]
	if w == nil {
		w = f.newWatcher(kc.server, c)
		if r.watchers == nil {
			r.watchers = map[string]*watcher{}
		}
		r.watchers[kc.server] = w
	}
	w.users[c.Name] = true
	if g.Admission != nil {
		w.watchAdmission()
	}
}

// forget stops keeping the named graph on the named cluster.
func (r *repairs) forget(cluster, graph string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kc := r.clusters[cluster]
	if kc == nil {
		return
	}
	if kg := kc.graphs[graph]; kg != nil {
		kg.stop()
		delete(kc.graphs, graph)
	}
	if len(kc.graphs) == 0 {
		r.dropLocked(kc)
	}
}

// forgetGraph stops keeping the named graph anywhere.
func (r *repairs) forgetGraph(graph string) {
	r.mu.Lock()
	names := make([]string, 0, len(r.clusters))
	for name := range r.clusters {
		names = append(names, name)
	}
	r.mu.Unlock()
	for _, name := range names {
		r.forget(name, graph)
	}
}

// forgetCluster stops keeping anything on c, which left.
func (r *repairs) forgetCluster(c *Cluster) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kc := r.clusters[c.Name]; kc != nil && kc.c.Cluster == c.Cluster {
		r.dropLocked(kc)
	}
}

// dropLocked forgets kc, stopping its repairs, and its server's watcher
// once no cluster there keeps anything.
func (r *repairs) dropLocked(kc *keptCluster) {
	for _, kg := range kc.graphs {
		kg.stop()
	}
	delete(r.clusters, kc.c.Name)
	if w := r.watchers[kc.server]; w != nil {
		delete(w.users, kc.c.Name)
		if len(w.users) == 0 {
			w.stop()
			delete(r.watchers, kc.server)
		}
	}
}

func (kg *keptGraph) stop() {
	if kg.repair != nil {
		kg.repair.cancel()
		kg.repair = nil
	}
}

// gone is told by the watcher of server that an object of that kind and
// name is gone there (deleted, being deleted, or missing from a list that
// showed it before). Every graph kept on a cluster of that server that
// owns it is repaired; a missing CRD is shown at once.
func (f *FanOut) gone(server string, kind objectKind, name string) {
	type lost struct {
		c Cluster
		g Graph
	}
	var shown []lost
	r := &f.repairs
	r.mu.Lock()
	for _, kc := range r.clusters {
		if kc.server != server {
			continue
		}
		for _, kg := range kc.graphs {
			if !kg.g.owns(kind, name) {
				continue
			}
			f.opts.Logger.Info("object the fan-out keeps was deleted from the cluster; applying it again",
				"cluster", kc.c.Name, "graph", kg.g.Name, "kind", kind.String(), "name", name)
			f.shared.drop(server, kg.g.CRD.Name)
			if kind == kindCRD {
				shown = append(shown, lost{kc.c, kg.g})
			}
			f.startRepair(kc, kg)
		}
	}
	r.mu.Unlock()
	for _, l := range shown {
		msg := fmt.Sprintf("CRD %s was deleted from the cluster; applying it again", l.g.CRD.Name)
		changed := f.tracker.recordVersion(f.lifetime(l.c), l.g.Name, l.c.Name, l.g.Generation, l.g.Revision, CRDMissing, msg)
		if changed && f.opts.OnTransition != nil {
			f.opts.OnTransition(l.g.Name, l.c.Name, CRDMissing, msg)
		}
	}
}

// lifetime is what bounds work for c: its engagement, else the FanOut's.
func (f *FanOut) lifetime(c Cluster) context.Context {
	if c.Engagement != nil {
		return c.Engagement
	}
	return f.ctx
}

// startRepair starts kg's repair on kc, or asks the one in flight for one
// more attempt. Called with the repairs' lock held.
func (f *FanOut) startRepair(kc *keptCluster, kg *keptGraph) {
	if kg.repair != nil {
		select {
		case kg.repair.kick <- struct{}{}:
		default:
		}
		return
	}
	ctx, cancel := context.WithCancel(f.ctx)
	stop := context.AfterFunc(f.lifetime(kc.c), cancel)
	run := &repairRun{cancel: func() { stop(); cancel() }, kick: make(chan struct{}, 1)}
	kg.repair = run
	go f.repair(ctx, kc.c, kg.g, run)
}

// repair runs Ensure for g on c, with backoff, until it succeeds with no
// further kick pending, or run is cancelled.
func (f *FanOut) repair(ctx context.Context, c Cluster, g Graph, run *repairRun) {
	defer run.cancel()
	delay := serveRetry
	for {
		err := f.Ensure(ctx, c.Name, g)
		if ctx.Err() != nil {
			return
		}
		if err == nil && f.repairDone(c.Name, g.Name, run) {
			return
		}
		if err == nil {
			delay = serveRetry
			continue // kicked meanwhile
		}
		select {
		case <-ctx.Done():
			return
		case <-run.kick:
			delay = serveRetry
		case <-time.After(delay):
			delay = min(2*delay, serveRetryMax)
		}
	}
}

// repairDone ends run unless it was kicked since its last attempt began.
func (f *FanOut) repairDone(cluster, graph string, run *repairRun) bool {
	r := &f.repairs
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-run.kick:
		return false
	default:
	}
	if kc := r.clusters[cluster]; kc != nil {
		if kg := kc.graphs[graph]; kg != nil && kg.repair == run {
			kg.repair = nil
		}
	}
	return true
}
