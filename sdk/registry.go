package sdk

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/revisions"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// registry is what the Hub knows, under one lock: the graphs it serves,
// the ones being removed, the clusters engaged, and what SetupWithManager
// gave it (the manager, its event recorder, the revision store and the
// schema resolver). The other parts read and change it through its
// methods (its side of removals is in removal.go), except the rollout
// hooks (rollout.go), which read graphs, clusters and revisions under mu
// as the Hub's fields: that is why the Hub embeds it.
//
// One lock, not one per map: which graph holds an instance kind spans the
// served graphs and the removals (kindFreeLocked), a removal moves a graph
// from one to the other, and a finished removal is recorded in removed in
// the same step, so the RGD controller never sees it half done. mu is held
// only for reads and writes of these fields, never across I/O; the only
// lock taken while it is held is the revision store's (endRemoval). A
// graph name's lock (nameLocks), when needed, is taken before it.
type registry struct {
	mu       sync.Mutex
	graphs   map[string]*registration
	removals map[string]*removal
	removed  map[string]types.UID // per RGD name, the UID whose removal finished; forgotten when the RGD is gone
	clusters map[string]*engaged
	// mgr is the manager the Hub was set up with; nil before.
	mgr      mcmanager.Manager
	recorder events.EventRecorder
	// revisions records every served spec on the hub; nil until
	// SetupWithManager (see versions.go).
	revisions *revisions.Store
	// resolver types child kinds for the compiler; compileWith is the rest
	// of the options every graph is compiled with (see compileOptions).
	resolver    graph.SchemaResolver
	compileWith graph.Options
}

func newRegistry(opts Options) *registry {
	return &registry{
		graphs:      map[string]*registration{},
		removals:    map[string]*removal{},
		removed:     map[string]types.UID{},
		clusters:    map[string]*engaged{},
		compileWith: graph.Options{Strict: opts.Compile.Strict, Limits: opts.Compile.Limits},
	}
}

// source is where a registration came from; only its source removes it.
type source string

const (
	fromGo  source = "Go (RegisterGraph)"
	fromRGD source = "a ResourceGraphDefinition object"
)

// registration is a graph as served, with what it was compiled from.
type registration struct {
	graph *graph.Graph
	// revision is the GraphRevision graph was compiled from (0 when the
	// hub keeps no record).
	revision      int64
	spec          v1alpha1.ResourceGraphDefinitionSpec
	allowBreaking bool
	rgd           *v1alpha1.ResourceGraphDefinition // for events; nil when registered from Go
	source        source
}

// engaged is one cluster the manager engaged, as the hub knows it.
type engaged struct {
	name string
	cl   cluster.Cluster
	ctx  context.Context // the engagement; ends when the cluster leaves
}

// hubCluster is e as the fan-out names it.
func (e *engaged) hubCluster() hub.Cluster {
	return hub.Cluster{Name: e.name, Cluster: e.cl, Engagement: e.ctx}
}

// setManager records mgr as the one manager the Hub lives in, and its
// event recorder. Under the same lock it calls adopt, which reports whether
// the Hub has just learnt its provider; then it returns the graphs
// registered so far, which have still to be published through it.
func (r *registry) setManager(mgr mcmanager.Manager, adopt func() bool) ([]spoke.Version, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mgr != nil {
		return nil, ErrAlreadySetUp
	}
	r.mgr = mgr
	var registered []spoke.Version
	if adopt() {
		for _, reg := range r.graphs {
			if reg.graph.IsHubGraph() {
				continue // served on the hub, never published (hubgraphs.go)
			}
			registered = append(registered, spoke.Version{Graph: reg.graph, Revision: reg.revision})
		}
	}
	r.recorder = mgr.GetLocalManager().GetEventRecorder("fleetgraph")
	return registered, nil
}

// lookup is the named graph's registration; nil when it is not served.
func (r *registry) lookup(name string) *registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.graphs[name]
}

// names are the served graphs' names, in no order.
func (r *registry) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.graphs))
	for name := range r.graphs {
		out = append(out, name)
	}
	return out
}

// unchanged returns the graph served under rgd's name when src registered
// it from the same spec and breaking-change opt-in (and points its events
// at rgd); nil when rgd is to be compiled. A name src did not register is
// refused with ErrNameTaken.
func (r *registry) unchanged(rgd *v1alpha1.ResourceGraphDefinition, src source, allow bool) (*graph.Graph, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg, ok := r.graphs[rgd.Name]
	if ok && reg.source != src {
		return nil, fmt.Errorf("%w: graph %q is registered from %s", ErrNameTaken, rgd.Name, reg.source)
	}
	if ok && reg.allowBreaking == allow && equality.Semantic.DeepEqual(reg.spec, rgd.Spec) {
		reg.rgd = eventTarget(rgd)
		return reg.graph, nil
	}
	return nil, nil
}

// add serves reg under its graph's name, unless another graph has its
// instance kind (kindFreeLocked).
func (r *registry) add(reg *registration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.kindFreeLocked(reg.graph); err != nil {
		return err
	}
	r.graphs[reg.graph.Name] = reg
	return nil
}

// kindFreeLocked refuses g when another graph, served or being removed,
// has its instance kind: two graphs must never reconcile one instance.
// The caller holds mu.
func (r *registry) kindFreeLocked(g *graph.Graph) error {
	gk := g.Instance.GVK.GroupKind()
	holds := func(other *registration) bool {
		return other.graph.Name != g.Name && other.graph.Instance.GVK.GroupKind() == gk
	}
	for _, other := range r.graphs {
		if holds(other) {
			return fmt.Errorf("%w: %s is served by graph %q (from %s)", ErrKindTaken, gk, other.graph.Name, other.source)
		}
	}
	for _, rm := range r.removals {
		if holds(rm.reg) {
			return fmt.Errorf("%w: %s is served by graph %q, which is being removed", ErrKindTaken, gk, rm.reg.graph.Name)
		}
	}
	return nil
}

// allGraphs is every graph served or being removed.
func (r *registry) allGraphs() []*graph.Graph {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*graph.Graph, 0, len(r.graphs)+len(r.removals))
	for _, reg := range r.graphs {
		out = append(out, reg.graph)
	}
	for _, rm := range r.removals {
		out = append(out, rm.reg.graph)
	}
	return out
}

// eventTarget is the RGD object events about the named graph go on, and
// the recorder to write them with; nil when there is none.
func (r *registry) eventTarget(graphName string) (*v1alpha1.ResourceGraphDefinition, events.EventRecorder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var target *v1alpha1.ResourceGraphDefinition
	if reg := r.graphs[graphName]; reg != nil {
		target = reg.rgd // register replaces it under mu
	}
	return target, r.recorder
}

// engage records e, the cluster engaged under its name now.
func (r *registry) engage(e *engaged) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clusters[e.name] = e
}

// disengage forgets e and reports whether it was the cluster engaged under
// its name (not replaced by a newer engagement meanwhile).
func (r *registry) disengage(e *engaged) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	current := r.clusters[e.name] == e
	if current {
		delete(r.clusters, e.name)
	}
	return current
}

// cluster is the engaged cluster of that name; nil when there is none.
func (r *registry) cluster(name string) *engaged {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clusters[name]
}

// engagedClusters are the clusters engaged now, in no order.
func (r *registry) engagedClusters() []*engaged {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*engaged, 0, len(r.clusters))
	for _, e := range r.clusters {
		out = append(out, e)
	}
	return out
}

// clusterNames are the engaged clusters' names, sorted.
func (r *registry) clusterNames() []string {
	r.mu.Lock()
	out := make([]string, 0, len(r.clusters))
	for name := range r.clusters {
		out = append(out, name)
	}
	r.mu.Unlock()
	slices.Sort(out)
	return out
}

// revisionStore is the revision store; nil until SetupWithManager.
func (r *registry) revisionStore() *revisions.Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.revisions
}

func (r *registry) setRevisionStore(s *revisions.Store) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.revisions = s
}
