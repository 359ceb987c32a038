package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/hubgraph"
	"github.com/fleetgraph/fleetgraph/internal/replicas"
	"github.com/fleetgraph/fleetgraph/internal/revisions"
	rgdctrl "github.com/fleetgraph/fleetgraph/internal/rgd"
	"github.com/fleetgraph/fleetgraph/internal/rollout"
	"github.com/fleetgraph/fleetgraph/internal/spokeschemas"
	"github.com/fleetgraph/fleetgraph/internal/steps"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// ErrAlreadySetUp is returned by a second SetupWithManager (or Run): a Hub
// lives in one manager.
var ErrAlreadySetUp = errors.New("fleetgraph: hub is already set up with a manager")

// Errors RegisterGraph and UnregisterGraph return when another registration
// holds what the call needs; match them with errors.Is. The RGD controller
// reports the same refusals on the RGD as GraphAccepted=False.
var (
	// ErrNameTaken: the name is registered from the other source (an RGD
	// object on the hub, or Go). Only the source that registered a graph
	// replaces or removes it.
	ErrNameTaken = rgdctrl.ErrNameTaken
	// ErrKindTaken: another registered graph already serves the graph's
	// instance kind (group and kind); the first keeps serving.
	ErrKindTaken = rgdctrl.ErrKindTaken
	// ErrRemoving: the graph of that name that the other source registered
	// is still being removed (see UnregisterGraph); retry later.
	ErrRemoving = rgdctrl.ErrRemoving
)

// Hub compiles ResourceGraphDefinitions, puts each generated CRD on every
// engaged cluster and reconciles the graph's instances in each of them. Its
// methods are safe for concurrent use.
//
// A Hub lives inside a multicluster-runtime manager: SetupWithManager embeds
// it in one the caller owns (typically mcmanager.WithMultiCluster around an
// existing controller-runtime manager), Run makes and runs one of its own.
// Note that only mcmanager's Start starts the provider: a program that starts
// the inner controller-runtime manager alone engages no cluster.
type Hub struct {
	provider multicluster.Provider
	opts     Options
	fanOut   *hub.FanOut          // fanout.go
	schemas  spokeschemas.Checker // each cluster's schemas of the graphs' kinds
	runtime  *spoke.Runtime
	// hubGraphs serves the graphs with targets on the hub (hubgraphs.go).
	hubGraphs *hubgraph.Runtime
	changed   chan string

	// names serialises Register and Unregister per graph name, so that the
	// graph served under a name is always the one registered last, and
	// compiles run the compiles outside every lock (names.go, compiles.go).
	names    nameLocks
	compiles *compiles
	mu       sync.Mutex
	mgr      mcmanager.Manager
	recorder events.EventRecorder
	graphs   map[string]*registration
	removals map[string]*removal
	removed  map[string]types.UID // per RGD name, the UID whose removal finished; forgotten when the RGD is gone
	clusters map[string]*engaged
	// resolver types child kinds for the compiler; see compileOptions.
	resolver graph.SchemaResolver
	// revisions records every served spec on the hub; nil until
	// SetupWithManager (see versions.go).
	revisions *revisions.Store
	// planner decides placement and rollout waves; rollouts moves the
	// GraphRollouts on (nil when disabled). See rollout.go.
	planner  *rollout.Planner
	rollouts *rollout.Controller
	// replicas merges the fleet status with other replicas'; nil unless
	// Options.Replica is set (see sharding.go).
	replicas *replicas.Status

	// ctx bounds background removals; stop ends it when the manager stops.
	ctx  context.Context
	stop context.CancelFunc
	// departures are the clean-ups after clusters that left (departure.go).
	departures sync.WaitGroup
	// noClusterWarning is how long a Hub with a provider may engage no
	// cluster before it says so (provider.go).
	noClusterWarning time.Duration
	// workersSet: Options.Workers was given, so the manager's
	// MaxConcurrentReconciles does not replace it (controller_options.go).
	workersSet bool
	// steps, when set, is told how long each step of registering and
	// fanning out a graph takes (benchmarks; see internal/steps).
	steps atomic.Pointer[steps.Func]
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

// NewHub returns a Hub. It serves the clusters that the provider of the
// manager it is set up with engages (mgr.GetProvider()): pass nil to use
// that provider, as the multicluster-runtime idiom has it. A non-nil
// provider must be the manager's, or SetupWithManager returns
// ErrProviderMismatch; Run makes its manager with it. With no provider
// anywhere the Hub runs in single-cluster mode: the manager's own cluster is
// the hub and the only spoke, served by the same code.
func NewHub(provider multicluster.Provider, opts Options) (*Hub, error) {
	workersSet := opts.Workers != 0
	opts = opts.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	h := &Hub{
		provider: provider,
		opts:     opts,
		changed:  make(chan string, 64),
		graphs:   map[string]*registration{},
		removals: map[string]*removal{},
		removed:  map[string]types.UID{},
		clusters: map[string]*engaged{},
		ctx:      ctx,
		stop:     stop,

		noClusterWarning: defaultNoClusterWarning,
		workersSet:       workersSet,
	}
	h.hubGraphs = h.newHubGraphs() // hubgraphs.go
	h.compiles = newCompiles(ctx, opts.CompileTimeout, h.notifyChanged)
	h.planner = h.newPlanner()
	h.schemas.Timeout = hub.DefaultRequestTimeout
	h.fanOut = h.newFanOut(provider) // fanout.go
	h.runtime = spoke.New(spoke.Options{
		Workers:         opts.Workers,
		ItemConcurrency: opts.ItemConcurrency,
		FieldManager:    opts.FieldManager,
		Gate:            h.gate,
		Resync:          opts.InstanceResync,
		OrphanGrace:     opts.OrphanGrace,
		AdoptUnowned:    opts.AdoptUnowned,
		Logger:          opts.Logger.WithName("spoke"),

		ConfineToNamespace:  opts.ConfineToNamespace,
		ClusterScopedGraphs: opts.ClusterScopedGraphs,
		ClusterLabels:       h.clusterLabels, // cluster_labels.go
	})
	return h, nil
}

// RegisterGraph compiles rgd and serves it on every engaged cluster, current
// and future; registering a changed RGD of the same name replaces the graph
// and re-applies its CRD everywhere. It works before and after the manager
// starts and returns without waiting for any cluster: watch FleetStatus for
// progress. A compile error is returned as a *graph.Error (several may be
// joined) and leaves any graph served under that name in place.
//
// A name the RGD controller registered is refused with ErrNameTaken, and a
// graph whose instance kind another graph serves with ErrKindTaken. The RGD
// controller never removes a graph registered here. Registering a graph
// whose UnregisterGraph is still cleaning up stops that cleanup and serves
// the graph again (its admission policy is put back).
//
// The compile runs outside every lock the Hub holds for other graphs, so
// registering one graph never waits for another's compile; it is bounded
// by Options.Limits and Options.CompileTimeout. A spec that failed to
// compile is remembered: registering it again returns the same error
// without compiling, until the spec (or the hub's schema of a kind it
// uses) changes.
func (h *Hub) RegisterGraph(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) error {
	_, err := h.register(ctx, rgd, fromGo)
	return err
}

func (h *Hub) register(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, src source) (*graph.Graph, error) {
	defer h.names.lock(rgd.Name)()
	if err := h.takeBackRemoval(rgd.Name, src); err != nil {
		return nil, err
	}
	allow := v1alpha1.AllowsBreakingChanges(rgd)
	h.mu.Lock()
	reg, ok := h.graphs[rgd.Name]
	if ok && reg.source != src {
		h.mu.Unlock()
		return nil, fmt.Errorf("%w: graph %q is registered from %s", ErrNameTaken, rgd.Name, reg.source)
	}
	if ok && reg.allowBreaking == allow && equality.Semantic.DeepEqual(reg.spec, rgd.Spec) {
		reg.rgd = eventTarget(rgd)
		h.mu.Unlock()
		return reg.graph, nil
	}
	h.mu.Unlock()

	start := time.Now()
	g, err := h.compile(ctx, rgd, src)
	if err != nil {
		return nil, err
	}
	start = h.stepSince(rgd.Name, steps.Compile, start)
	rev := h.recordRevision(ctx, rgd)
	start = h.stepSince(rgd.Name, steps.Revision, start)
	h.mu.Lock()
	if err := h.kindFreeLocked(g); err != nil {
		h.mu.Unlock()
		return nil, err
	}
	h.graphs[rgd.Name] = &registration{graph: g, revision: rev, spec: *rgd.Spec.DeepCopy(), allowBreaking: allow, rgd: eventTarget(rgd), source: src}
	h.mu.Unlock()
	if g.IsHubGraph() {
		return g, h.serveHubGraph(g) // hubgraphs.go
	}
	h.hubGraphs.Stop(rgd.Name) // it may have lost its targets
	if err := h.runtime.Serve(spoke.Version{Graph: g, Revision: rev}); err != nil {
		return nil, fmt.Errorf("serving graph %s: %w", rgd.Name, err)
	}
	h.stepSince(rgd.Name, steps.Serve, start)
	// With a publishing provider, the graph is published at once, so that
	// clusters can bind it before any of them is engaged (fanout.go).
	h.fanOut.Publish(h.hubGraph(g, rev))
	h.opts.Logger.Info("graph registered", "graph", rgd.Name, "kind", g.Instance.GVK.String(), "resources", len(g.Nodes), "source", src)
	return g, nil
}

// step passes a step's duration to the observer set for benchmarks, if any.
func (h *Hub) step(graphName, cluster, step string, took time.Duration) {
	if f := h.steps.Load(); f != nil {
		(*f)(graphName, cluster, step, took)
	}
}

// stepSince reports the time since start as one of RegisterGraph's steps
// and returns the time it ended.
func (h *Hub) stepSince(graphName, step string, start time.Time) time.Time {
	now := time.Now()
	h.step(graphName, "", step, now.Sub(start))
	return now
}

// kindFreeLocked refuses g when another graph, served or being removed,
// has its instance kind: two graphs must never reconcile one instance.
func (h *Hub) kindFreeLocked(g *graph.Graph) error {
	gk := g.Instance.GVK.GroupKind()
	holds := func(other *registration) bool {
		return other.graph.Name != g.Name && other.graph.Instance.GVK.GroupKind() == gk
	}
	for _, other := range h.graphs {
		if holds(other) {
			return fmt.Errorf("%w: %s is served by graph %q (from %s)", ErrKindTaken, gk, other.graph.Name, other.source)
		}
	}
	for _, rm := range h.removals {
		if holds(rm.reg) {
			return fmt.Errorf("%w: %s is served by graph %q, which is being removed", ErrKindTaken, gk, rm.reg.graph.Name)
		}
	}
	return nil
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

// UnregisterGraph stops serving the named graph, registered with
// RegisterGraph, and removes it from every cluster in the background: the
// admission policy goes from every spoke at once, so no new instance gets
// the runtime's finalizer. Then, by default, instances already holding it
// keep being finalized when deleted (their children are deleted; nothing
// else is reconciled) until none is left; with Options.OrphanInstances they
// are released instead (the finalizer is taken off, children stay). With
// Options.DeleteCRDsOnUnregister, the CRD is then deleted from every spoke
// that has no instance left. A spoke that cannot be reached is retried
// with backoff until it is done or the manager stops.
//
// UnregisterGraph returns once the removal has started. Removals live in
// memory: if the process ends before one is done, register and unregister
// the graph again after the restart to finish it. Unregistering an unknown
// graph is a no-op; a graph the RGD controller registered is refused with
// ErrNameTaken (delete its RGD instead).
func (h *Hub) UnregisterGraph(_ context.Context, name string) error {
	defer h.names.lock(name)()
	h.mu.Lock()
	reg, ok := h.graphs[name]
	h.mu.Unlock()
	if !ok {
		return nil
	}
	if reg.source != fromGo {
		return fmt.Errorf("%w: graph %q is registered from %s", ErrNameTaken, name, reg.source)
	}
	h.startRemovalLocked(name, h.opts.OrphanInstances, "")
	return nil
}

// FleetStatus returns the named graph's state on every engaged cluster: CRD
// state and instance counts. It is empty for a graph not registered.
func (h *Hub) FleetStatus(name string) GraphStatus {
	st := h.fanOut.Status(name)
	served := h.runtime.Served(name)
	counts := h.runtime.Counts(name)
	for i := range st.Clusters {
		cs := &st.Clusters[i]
		c := counts[multicluster.ClusterName(cs.Cluster)]
		cs.Instances, cs.ReadyInstances = c.Total, c.Ready
		if v, ok := served[multicluster.ClusterName(cs.Cluster)]; ok {
			cs.Serving, cs.ServedGeneration = true, v.Graph.Generation
		}
	}
	return st
}

// Graphs returns the names of the registered graphs.
func (h *Hub) Graphs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.graphs))
	for name := range h.graphs {
		out = append(out, name)
	}
	return out
}

// Run is the standalone way to run a Hub: it makes a multicluster manager
// for the hub cluster at cfg with the Hub's provider, sets the provider up
// in it when the provider needs that (it has a
// SetupWithManager(mcmanager.Manager) error method, as secret.Provider
// does), sets the Hub up and runs it until ctx is cancelled. Metrics and
// health endpoints are off; embed the Hub with SetupWithManager to choose
// them.
func (h *Hub) Run(ctx context.Context, cfg *rest.Config) error {
	mgr, err := mcmanager.New(cfg, h.provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if p, ok := h.provider.(interface {
		SetupWithManager(mcmanager.Manager) error
	}); ok {
		if err := p.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting the provider up: %w", err)
		}
	}
	if err := h.SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
