package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// ErrAlreadySetUp is returned by a second SetupWithManager (or Run): a Hub
// lives in one manager.
var ErrAlreadySetUp = errors.New("fleetgraph: hub is already set up with a manager")

var _ hub.Registry = &Hub{}

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
	tracker  *hub.Tracker
	fanOut   *hub.FanOut
	runtime  *spoke.Runtime
	changed  chan string

	// regMu serialises Register and Unregister, so that the graph served
	// under a name is always the one registered last.
	regMu    sync.Mutex
	mu       sync.Mutex
	mgr      mcmanager.Manager
	recorder events.EventRecorder
	graphs   map[string]*registration
	clusters map[string]*engaged
	// revisions records every served spec on the hub; nil until
	// SetupWithManager (see versions.go).
	revisions *hub.Revisions
}

// registration is a graph as served, with what it was compiled from.
type registration struct {
	graph         *graph.Graph
	spec          v1alpha1.ResourceGraphDefinitionSpec
	allowBreaking bool
	rgd           *v1alpha1.ResourceGraphDefinition // for events; nil when registered from Go
}

// engaged is one cluster the manager engaged, as the hub knows it.
type engaged struct {
	name string
	cl   cluster.Cluster
}

// NewHub returns a Hub for the clusters provider engages. A nil provider is
// single-cluster mode: the manager's own cluster is the hub and the only
// spoke, served by the same code.
func NewHub(provider multicluster.Provider, opts Options) (*Hub, error) {
	opts = opts.withDefaults()
	h := &Hub{
		provider: provider,
		opts:     opts,
		changed:  make(chan string, 64),
		graphs:   map[string]*registration{},
		clusters: map[string]*engaged{},
	}
	h.tracker = &hub.Tracker{OnChange: h.notifyChanged, Failures: hub.FailuresOf(provider)}
	h.fanOut = hub.NewFanOut(h.tracker, hub.FanOutOptions{
		FieldManager:     opts.FieldManager,
		EstablishTimeout: opts.EstablishTimeout,
		AllowBreaking:    h.allowsBreaking,
		OnTransition:     h.onTransition,
		Logger:           opts.Logger.WithName("fanout"),
	})
	h.runtime = spoke.New(spoke.Options{
		Workers:      opts.Workers,
		FieldManager: opts.FieldManager,
		Gate:         h.gate,
		Logger:       opts.Logger.WithName("spoke"),
	})
	return h, nil
}

// RegisterGraph compiles rgd and serves it on every engaged cluster, current
// and future; registering a changed RGD of the same name replaces the graph
// and re-applies its CRD everywhere. It works before and after the manager
// starts and returns without waiting for any cluster: watch FleetStatus for
// progress. A compile error is returned as a *graph.Error (several may be
// joined) and leaves any graph served under that name in place.
func (h *Hub) RegisterGraph(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) error {
	_, err := h.Register(ctx, rgd)
	return err
}

// Register is RegisterGraph returning the compiled graph; it implements
// hub.Registry for the RGD controller.
func (h *Hub) Register(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (*graph.Graph, error) {
	h.regMu.Lock()
	defer h.regMu.Unlock()
	allow := rgd.Annotations[v1alpha1.AnnotationAllowBreakingChanges] == "true"
	h.mu.Lock()
	if reg, ok := h.graphs[rgd.Name]; ok && reg.allowBreaking == allow && equality.Semantic.DeepEqual(reg.spec, rgd.Spec) {
		reg.rgd = eventTarget(rgd)
		h.mu.Unlock()
		return reg.graph, nil
	}
	h.mu.Unlock()

	g, err := graph.Compile(rgd, graph.Options{Resolver: h.opts.SchemaResolver})
	if err != nil {
		return nil, err
	}
	h.recordRevision(ctx, rgd, g)
	h.mu.Lock()
	h.graphs[rgd.Name] = &registration{graph: g, spec: *rgd.Spec.DeepCopy(), allowBreaking: allow, rgd: eventTarget(rgd)}
	h.mu.Unlock()
	if err := h.runtime.Serve(g); err != nil {
		return nil, fmt.Errorf("serving graph %s: %w", rgd.Name, err)
	}
	h.opts.Logger.Info("graph registered", "graph", rgd.Name, "kind", g.Instance.GVK.String(), "resources", len(g.Nodes))
	return g, nil
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

// UnregisterGraph stops serving the named graph on every cluster. Instances
// and children are left as they are, and so are the CRDs unless
// Options.DeleteCRDsOnUnregister is set. Unregistering an unknown graph is a
// no-op.
func (h *Hub) UnregisterGraph(ctx context.Context, name string) error {
	return h.Unregister(ctx, name)
}

// Unregister implements hub.Registry.
func (h *Hub) Unregister(ctx context.Context, name string) error {
	reg, clusters := h.forget(name)
	if reg == nil || !h.opts.DeleteCRDsOnUnregister {
		return nil
	}
	// Outside regMu: a dead spoke must not hold up other registrations.
	return hub.DeleteUnusedCRDs(ctx, clusters, reg.graph)
}

// forget stops serving the named graph and returns what it was, with the
// clusters engaged at that moment.
func (h *Hub) forget(name string) (*registration, []hub.Cluster) {
	h.regMu.Lock()
	defer h.regMu.Unlock()
	h.mu.Lock()
	reg, ok := h.graphs[name]
	delete(h.graphs, name)
	clusters := h.clusterList()
	h.mu.Unlock()
	if !ok {
		return nil, nil
	}
	h.runtime.Stop(name)
	h.tracker.DropGraph(name)
	h.opts.Logger.Info("graph unregistered", "graph", name)
	return reg, clusters
}

// FleetStatus returns the named graph's state on every engaged cluster: CRD
// state and instance counts. It is empty for a graph not registered.
func (h *Hub) FleetStatus(name string) hub.GraphStatus {
	counts := map[string]hub.InstanceCount{}
	served := h.runtime.Served(name)
	for cl, c := range h.runtime.Counts(name) {
		gen, serving := served[cl]
		counts[string(cl)] = hub.InstanceCount{Total: c.Total, Ready: c.Ready, Serving: serving, Generation: gen}
	}
	return h.tracker.Snapshot(name, counts)
}

// Status implements hub.Registry.
func (h *Hub) Status(name string) hub.GraphStatus { return h.FleetStatus(name) }

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
// for the hub cluster at cfg with the Hub's provider, sets the Hub up in it
// and runs it until ctx is cancelled. Metrics and health endpoints are off;
// embed the Hub with SetupWithManager to choose them.
func (h *Hub) Run(ctx context.Context, cfg *rest.Config) error {
	mgr, err := mcmanager.New(cfg, h.provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := h.SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
