package sdk

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spokeschemas"
	"github.com/fleetgraph/fleetgraph/internal/steps"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// The Hub puts its graphs' CRDs on the clusters with a hub.FanOut: the
// instance runtime's gate calls FanOut.Ensure with the hub.Graph made from
// each compiled graph (hubGraph), so instances are watched only where the
// CRD is established. A provider that is a hub.Publisher (providers/kcp's
// APIExport provider) serves the graphs instead of a CRD per cluster, and
// one that is a hub.EngagementReporter has its failures listed.

// crdFanOut is the Hub's side of the fan-out: it owns the hub.FanOut and
// the schema checker, and is the spoke runtime's gate (setup.go). fanOut is replaced once, under registry.mu, when
// SetupWithManager learns the manager's provider, before anything has
// reached the clusters.
type crdFanOut struct {
	h          *Hub
	fanOut     *hub.FanOut
	schemas    spokeschemas.Checker // each cluster's schemas of the graphs' kinds
	admissions admissionCache
}

// admissionCache holds each graph's admission policy objects, built once
// for the graph's latest compilation: every cluster is given the same
// objects (the fan-out only reads them), where building them per cluster
// kept about 3 KiB per cluster alive for each graph.
type admissionCache struct {
	mu sync.Mutex
	m  map[string]cachedAdmission
}

type cachedAdmission struct {
	g *graph.Graph
	a *hub.Admission
}

// of returns g's admission policy and probe, built when g is new.
func (c *admissionCache) of(g *graph.Graph) *hub.Admission {
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, ok := c.m[g.Name]; ok && got.g == g {
		return got.a
	}
	if c.m == nil {
		c.m = map[string]cachedAdmission{}
	}
	a := admissionOf(g)
	c.m[g.Name] = cachedAdmission{g: g, a: a}
	return a
}

// newCRDFanOut makes the fan-out for provider (nil in single-cluster mode).
func newCRDFanOut(h *Hub, provider multicluster.Provider) *crdFanOut {
	c := &crdFanOut{h: h}
	c.schemas.Timeout = hub.DefaultRequestTimeout
	c.fanOut = c.newFanOut(provider)
	return c
}

// newFanOut makes the hub.FanOut for provider.
func (c *crdFanOut) newFanOut(provider multicluster.Provider) *hub.FanOut {
	opts := hub.Options{
		FieldManager:     c.h.opts.Instances.FieldManager,
		EstablishTimeout: c.h.opts.CRDs.EstablishTimeout,
		Expect:           c.expected, // status.go
		OnChange:         c.h.changed.notify,
		OnTransition:     c.onTransition,
		Logger:           c.h.opts.Logger.WithName("fanout"),
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
func (c *crdFanOut) publishes() bool {
	_, ok := c.h.provider.(hub.Publisher)
	return ok
}

// hubGraph is g, compiled from revision, as the fan-out serves it: its
// CRD, the kinds its resources use, the RGD's breaking-change opt-in, a
// type-check against each cluster's schemas and, unless disabled, the
// admission policy that stamps new instances.
func (c *crdFanOut) hubGraph(g *graph.Graph, revision int64) hub.Graph {
	hg := hub.Graph{
		Name:          g.Name,
		Generation:    g.Generation,
		Revision:      revision,
		CRD:           g.CRD,
		Kinds:         resourceKinds(g),
		AllowBreaking: allowsBreaking(c.h.lookup(g.Name)),
		Check: func(ctx context.Context, cl cluster.Cluster) error {
			return c.schemas.Check(ctx, cl, g)
		},
	}
	if !c.h.opts.CRDs.DisableAdmissionPolicy && !c.publishes() {
		hg.Admission = c.admissions.of(g)
	}
	return hg
}

// allowsBreaking reports whether reg's RGD opts in to breaking changes.
func allowsBreaking(reg *registration) bool { return reg != nil && reg.allowBreaking }

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
func (c *crdFanOut) removeAdmission(ctx context.Context, cl hub.Cluster, g *graph.Graph) error {
	hg := c.hubGraph(g, 0)
	hg.Admission = c.admissions.of(g)
	return c.fanOut.RemoveAdmission(ctx, cl, hg)
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
func (c *crdFanOut) ensure(ctx context.Context, cluster string, g *graph.Graph, revision int64) error {
	if f := c.h.steps.Load(); f != nil {
		ctx = steps.With(ctx, *f)
	}
	return c.fanOut.Ensure(ctx, cluster, c.hubGraph(g, revision))
}
