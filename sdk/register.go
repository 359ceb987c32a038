package sdk

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetgraph/fleetgraph/internal/steps"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// registrar registers and unregisters graphs, from Go and from RGD
// objects alike: it compiles, records the revision, checks the instance
// kind and serves the graph. Its own state is the per-name locks and the
// compiles; what is served is in the registry.
type registrar struct {
	h *Hub
	// names serialises register and unregister per graph name, so that the
	// graph served under a name is always the one registered last, and
	// compiles runs the compiles outside every lock (names.go, compiles.go).
	// A name's lock is taken before registry.mu, never while holding it.
	names    nameLocks
	compiles *compiles
}

func (r *registrar) register(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, src source) (*graph.Graph, error) {
	h := r.h
	defer r.names.lock(rgd.Name)()
	if err := h.remover.takeBack(rgd.Name, src); err != nil {
		return nil, err
	}
	allow := v1alpha1.AllowsBreakingChanges(rgd)
	if g, err := h.unchanged(rgd, src, allow); g != nil || err != nil {
		return g, err
	}

	start := time.Now()
	g, err := r.compile(ctx, rgd, src)
	if err != nil {
		return nil, err
	}
	start = r.stepSince(rgd.Name, steps.Compile, start)
	rev, recordErr := h.versions.record(ctx, rgd)
	start = r.stepSince(rgd.Name, steps.Revision, start)
	reg := &registration{graph: g, revision: rev, spec: *rgd.Spec.DeepCopy(), allowBreaking: allow, rgd: eventTarget(rgd), source: src}
	if err := h.add(reg); err != nil {
		return nil, err
	}
	if recordErr != nil {
		h.versions.recordLater(rgd, reg, recordErr) // numbering.go
	}
	if g.IsHubGraph() {
		return g, h.serveHubGraph(g) // hubgraphs.go
	}
	h.hubGraphs.Stop(rgd.Name) // it may have lost its targets
	if err := h.runtime.Serve(spoke.Version{Graph: g, Revision: rev}); err != nil {
		return nil, fmt.Errorf("serving graph %s: %w", rgd.Name, err)
	}
	r.stepSince(rgd.Name, steps.Serve, start)
	h.pull.registered(rgd.Name) // pull.go
	// With a publishing provider, the graph is published at once, so that
	// clusters can bind it before any of them is engaged (fanout.go).
	h.fanOut.Publish(h.hubGraph(g, rev))
	h.opts.Logger.Info("graph registered", "graph", rgd.Name, "kind", g.Instance.GVK.String(), "resources", len(g.Nodes), "source", src)
	return g, nil
}

// unregister starts the removal of the named graph registered from Go.
func (r *registrar) unregister(name string) error {
	defer r.names.lock(name)()
	reg := r.h.lookup(name)
	if reg == nil {
		return nil
	}
	if reg.source != fromGo {
		return fmt.Errorf("%w: graph %q is registered from %s", ErrNameTaken, name, reg.source)
	}
	r.h.remover.startLocked(name, r.h.opts.RGDs.OrphanInstances, "")
	return nil
}

// stepSince reports the time since start as one of RegisterGraph's steps
// to the observer set for benchmarks, if any, and returns the time it
// ended.
func (r *registrar) stepSince(graphName, step string, start time.Time) time.Time {
	now := time.Now()
	if f := r.h.steps.Load(); f != nil {
		(*f)(graphName, "", step, now.Sub(start))
	}
	return now
}

// eventTarget keeps what an event needs to point at the RGD object; RGDs
// that never came from the API server (no UID) get no events.
func eventTarget(rgd *v1alpha1.ResourceGraphDefinition) *v1alpha1.ResourceGraphDefinition {
	if rgd.UID == "" {
		return nil
	}
	t := &v1alpha1.ResourceGraphDefinition{}
	t.TypeMeta = rgd.TypeMeta
	t.ObjectMeta = *rgd.ObjectMeta.DeepCopy()
	t.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ResourceGraphDefinition"))
	return t
}
