package hub

import (
	"context"
	"sync"
	"time"
)

// Serve-mode backoff between two attempts on one cluster, as the instance
// runtime's gate retries.
const (
	serveRetry    = 200 * time.Millisecond
	serveRetryMax = 30 * time.Second
)

// servedGraphs are the graphs given to Serve: each is fanned out to every
// engaged cluster by a worker per cluster, until the graph is replaced or
// stopped or the cluster leaves.
type servedGraphs struct {
	mu     sync.Mutex
	graphs map[string]*servedGraph
}

// servedGraph is one version of a graph given to Serve.
type servedGraph struct {
	g      Graph
	ctx    context.Context // ends when the version is replaced or stopped
	cancel context.CancelFunc
}

// Serve takes g on: its CRD is made established on every engaged cluster,
// and on every cluster engaged later, each attempt retried with backoff
// (200ms doubling up to 30s) until it succeeds; with a Publisher, g is
// also published in the background at once, so that clusters can bind it
// before any is engaged. Status lists every engaged cluster for g from now
// on. A Serve of a graph of the same name replaces it: attempts for the
// old one stop. It returns at once.
func (f *FanOut) Serve(g Graph) {
	ctx, cancel := context.WithCancel(f.ctx)
	sg := &servedGraph{g: g, ctx: ctx, cancel: cancel}
	f.served.mu.Lock()
	if f.served.graphs == nil {
		f.served.graphs = map[string]*servedGraph{}
	}
	if old := f.served.graphs[g.Name]; old != nil {
		old.cancel()
	}
	f.served.graphs[g.Name] = sg
	f.served.mu.Unlock()
	f.Publish(g)
	for _, c := range f.clusters.list() {
		go f.drive(sg, c)
	}
	f.tracker.notify(g.Name)
}

// Stop ends everything the FanOut does for the named graph (Serve's
// attempts, Publish's publication) and forgets its status. What was put
// on the clusters stays, and is no longer kept there (see Ensure).
func (f *FanOut) Stop(name string) {
	f.served.mu.Lock()
	if sg := f.served.graphs[name]; sg != nil {
		sg.cancel()
		delete(f.served.graphs, name)
	}
	f.served.mu.Unlock()
	f.publisher.stop(name)
	f.repairs.forgetGraph(name) // repair.go
	f.tracker.dropGraph(name)
}

// engage starts a worker for every served graph on c, which was just
// engaged.
func (s *servedGraphs) engage(f *FanOut, c Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sg := range s.graphs {
		go f.drive(sg, c)
	}
}

// graph returns the graph of that name given to Serve.
func (s *servedGraphs) graph(name string) (Graph, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sg, ok := s.graphs[name]
	if !ok {
		return Graph{}, false
	}
	return sg.g, true
}

// drive makes sg's graph established on c, retrying with backoff, until
// it is, or the graph is replaced or stopped, or c leaves.
func (f *FanOut) drive(sg *servedGraph, c Cluster) {
	ctx, cancel := context.WithCancel(sg.ctx)
	defer cancel()
	if c.Engagement != nil {
		stop := context.AfterFunc(c.Engagement, cancel)
		defer stop()
	}
	for delay := serveRetry; ; delay = min(2*delay, serveRetryMax) {
		if f.Ensure(ctx, c.Name, sg.g) == nil || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// expected is the tracker's expectation: Options.Expect if set, else every
// engaged cluster for a graph given to Serve.
func (f *FanOut) expected(graph string) (int64, map[string]string) {
	if f.opts.Expect != nil {
		return f.opts.Expect(graph)
	}
	g, ok := f.served.graph(graph)
	if !ok {
		return 0, nil
	}
	clusters := f.clusters.list()
	out := make(map[string]string, len(clusters))
	for _, c := range clusters {
		out[c.Name] = ""
	}
	return g.Generation, out
}
