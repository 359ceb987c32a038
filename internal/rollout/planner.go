package rollout

import (
	"context"
	"fmt"
	"maps"
	"sync"
)

// PlacementFunc is the Go placement hook: it reports whether the named
// cluster, with the labels its provider gives it, serves the named graph.
type PlacementFunc func(graph, cluster string, labels map[string]string) bool

// Planner answers, for the hub's gate and fallback, whether a cluster
// serves a graph and whether a revision of it may reach the cluster now.
// Its rollouts come from the Controller. Safe for concurrent use.
type Planner struct {
	hook     PlacementFunc
	clusters func() []Cluster

	mu     sync.Mutex
	loaded bool
	plans  map[string]*plan // by graph name
	// ready is closed once loaded.
	ready chan struct{}
}

// NewPlanner returns a Planner placing with hook (nil places everywhere)
// over the clusters that clusters lists. It decides without rollouts until
// AwaitRollouts is called.
func NewPlanner(hook PlacementFunc, clusters func() []Cluster) *Planner {
	p := &Planner{hook: hook, clusters: clusters, loaded: true, plans: map[string]*plan{}, ready: make(chan struct{})}
	close(p.ready)
	return p
}

// AwaitRollouts makes every decision fail with ErrNotLoaded, and Ready
// wait, until a Controller has read the GraphRollout objects once, so that
// a restarted hub never serves a revision a rollout holds back. Call it
// before the first decision.
func (p *Planner) AwaitRollouts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loaded, p.ready = false, make(chan struct{})
}

// Ready waits until the rollouts are loaded or ctx ends.
func (p *Planner) Ready(ctx context.Context) error {
	p.mu.Lock()
	ready := p.ready
	p.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrNotLoaded, ctx.Err())
	}
}

// Decide returns nil when revision rev of the named graph may be served on
// the named cluster now, else ErrNotPlaced, ErrHeldBack or ErrNotLoaded
// (wrapped, with the reason). Revision 0 (unnumbered) is only placed when
// no GraphRollout governs the graph; under one it is ErrHeldBack, or
// ErrUnnumbered where it may reach a cluster that serves no numbered
// revision (unnumbered.go).
func (p *Planner) Decide(graphName, cluster string, rev int64) error {
	pl, wave, err := p.locate(graphName, cluster)
	if err != nil {
		return err
	}
	return pl.decideOn(cluster, rev, wave)
}

// Placed reports whether the named cluster serves the named graph at all.
func (p *Planner) Placed(graphName, cluster string) (bool, error) {
	_, _, err := p.locate(graphName, cluster)
	if err == ErrNotPlaced { //nolint:errorlint // locate returns it bare
		return false, nil
	}
	return err == nil, err
}

// locate finds the graph's rollout and the cluster's wave in it.
func (p *Planner) locate(graphName, cluster string) (*plan, int32, error) {
	pl, waves, err := p.assignment(graphName, nil)
	if err != nil || waves == nil {
		return pl, 0, err
	}
	wave, ok := waves[cluster]
	if !ok {
		return nil, 0, ErrNotPlaced
	}
	return pl, wave, nil
}

// assignment returns the graph's rollout and the wave of every placed
// cluster among clusters (nil: the engaged ones); nil waves when every
// cluster is placed in one wave.
func (p *Planner) assignment(graphName string, clusters []Cluster) (*plan, map[string]int32, error) {
	p.mu.Lock()
	loaded, pl := p.loaded, p.plans[graphName]
	p.mu.Unlock()
	if !loaded {
		return nil, nil, ErrNotLoaded
	}
	if pl == nil && p.hook == nil {
		return nil, nil, nil
	}
	if clusters == nil {
		clusters = p.clusters()
	}
	spec := planSpec(pl)
	var listed map[string]bool
	if pl != nil {
		listed = pl.listed
	}
	placed, labelsOf := placedClusters(graphName, spec.ClusterSelector, listed, p.hook, clusters)
	return pl, assign(spec, placed, labelsOf), nil
}

// DecideEngaged is Decide for every engaged cluster at once: cluster name
// to "" (revision rev may be served there now) or the reason it may not,
// and the clusters placed to serve the graph. Before the rollouts are
// loaded no cluster is known to be unplaced: all count as placed, each
// with ErrNotLoaded as its reason.
func (p *Planner) DecideEngaged(graphName string, rev int64) (map[string]string, map[string]bool) {
	clusters := p.clusters()
	decided, placed := p.decideAll(graphName, rev, clusters)
	p.mu.Lock()
	loaded := p.loaded
	p.mu.Unlock()
	if !loaded {
		for _, c := range clusters {
			placed[c.Name] = true
		}
	}
	return decided, placed
}

// decideAll is Decide for every one of clusters at once: cluster name to
// "" (serve) or the reason it may not, and whether it is placed.
func (p *Planner) decideAll(graphName string, rev int64, clusters []Cluster) (map[string]string, map[string]bool) {
	decided := make(map[string]string, len(clusters))
	placed := make(map[string]bool, len(clusters))
	pl, waves, err := p.assignment(graphName, clusters)
	for _, c := range clusters {
		decided[c.Name] = ""
		wave, ok := waves[c.Name]
		switch {
		case err != nil:
			decided[c.Name] = err.Error()
		case waves == nil:
			placed[c.Name] = true
		case !ok:
			decided[c.Name] = ErrNotPlaced.Error()
		default:
			placed[c.Name] = true
			if err := pl.decideOn(c.Name, rev, wave); err != nil {
				decided[c.Name] = err.Error()
			}
		}
	}
	return decided, placed
}

// set replaces the rollouts and marks them loaded.
func (p *Planner) set(plans map[string]*plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plans = maps.Clone(plans)
	if !p.loaded {
		p.loaded = true
		close(p.ready)
	}
}
