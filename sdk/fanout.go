package sdk

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/steps"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// The Hub puts its graphs' CRDs on the clusters with a hub.FanOut: the
// instance runtime's gate calls FanOut.Ensure with the hub.Graph made from
// each compiled graph (hubGraph), so instances are watched only where the
// CRD is established. A provider that is a hub.Publisher (providers/kcp's
// APIExport provider) serves the graphs instead of a CRD per cluster, and
// one that is a hub.EngagementReporter has its failures listed.

// newFanOut makes the fan-out for provider (nil in single-cluster mode).
func (h *Hub) newFanOut(provider multicluster.Provider) *hub.FanOut {
	opts := hub.Options{
		FieldManager:     h.opts.FieldManager,
		EstablishTimeout: h.opts.EstablishTimeout,
		Expect:           h.expected, // status.go
		OnChange:         h.notifyChanged,
		OnTransition:     h.onTransition,
		Logger:           h.opts.Logger.WithName("fanout"),
	}
	if r, ok := provider.(hub.EngagementReporter); ok {
		opts.Reporter = r
	}
	if p, ok := provider.(hub.Publisher); ok {
		opts.Publisher = p
	}
	return hub.New(opts)
}

// publishes reports whether the graphs are published through the
// provider (no CRD, no admission policy on the clusters).
func (h *Hub) publishes() bool {
	_, ok := h.provider.(hub.Publisher)
	return ok
}

// hubGraph is g, compiled from revision, as the fan-out serves it: its
// CRD, the kinds its resources use, the RGD's breaking-change opt-in, a
// type-check against each cluster's schemas and, unless disabled, the
// admission policy that stamps new instances.
func (h *Hub) hubGraph(g *graph.Graph, revision int64) hub.Graph {
	hg := hub.Graph{
		Name:          g.Name,
		Generation:    g.Generation,
		Revision:      revision,
		CRD:           g.CRD,
		Kinds:         resourceKinds(g),
		AllowBreaking: h.allowsBreaking(g.Name),
		Check: func(ctx context.Context, cl cluster.Cluster) error {
			return h.schemas.Check(ctx, cl, g)
		},
	}
	if !h.opts.DisableAdmissionPolicy && !h.publishes() {
		hg.Admission = admissionOf(g)
	}
	return hg
}

// admissionOf is g's admission policy and its probe.
func admissionOf(g *graph.Graph) *hub.Admission {
	policy, probe := contract.AdmissionPolicy(g), contract.AdmissionProbe(g)
	return &hub.Admission{
		Policy: policy[0], Binding: policy[1],
		ProbePolicy: probe[0], ProbeBinding: probe[1],
		ProbeObject: contract.AdmissionProbeObject(g),
	}
}

// removeAdmission takes g's admission policy off the cluster, whether or
// not this configuration installs it (an earlier one may have).
func (h *Hub) removeAdmission(ctx context.Context, c hub.Cluster, g *graph.Graph) error {
	hg := h.hubGraph(g, 0)
	hg.Admission = admissionOf(g)
	return h.fanOut.RemoveAdmission(ctx, c, hg)
}

// resourceKinds are the kinds g's resources use, external references
// included, sorted and without duplicates.
func resourceKinds(g *graph.Graph) []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		out = append(out, n.GVK)
	}
	return contract.SortedKinds(out)
}

// ensure is the gate's fan-out: one attempt on the named cluster, timed
// for the benchmarks when they observe the steps.
func (h *Hub) ensure(ctx context.Context, cluster string, g *graph.Graph, revision int64) error {
	if f := h.steps.Load(); f != nil {
		ctx = steps.With(ctx, *f)
	}
	return h.fanOut.Ensure(ctx, cluster, h.hubGraph(g, revision))
}
