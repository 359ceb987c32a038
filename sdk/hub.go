package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/hubgraph"
	rgdctrl "github.com/fleetgraph/fleetgraph/internal/rgd"
	"github.com/fleetgraph/fleetgraph/internal/rollout"
	"github.com/fleetgraph/fleetgraph/internal/steps"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// ErrHubOwnedOption is returned by NewHub when Options.Instances sets a
// field the Hub sets itself (see Options.Instances): it would be replaced,
// not used.
var ErrHubOwnedOption = errors.New("fleetgraph: the hub sets this option itself")

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
	runtime  *spoke.Runtime

	// The Hub is cut by concern into parts, each owning its state, in the
	// files named below; a part reaches the others through h. The
	// registry (registry.go) and the fan-out (fanout.go) are embedded: the
	// rollout part (rollouts, rollout.go) uses their fields and methods as
	// the Hub's.
	//
	// Locks: a graph name's lock (registrar.names) is taken before
	// registry.mu; registry.mu is held only around its fields, with none of
	// the other parts' locks (departures.mu, the compiles') and only the
	// revision store's taken under it (endRemoval's Forget).
	*registry  // the graphs served and being removed, the engaged clusters; under mu
	*crdFanOut // the CRDs on the clusters: hub.FanOut and the gate

	registrar     *registrar        // register.go: registering and unregistering
	remover       *remover          // removal.go: removing unregistered graphs
	departures    *departures       // departure.go: cleaning up after clusters that left
	servable      *servability      // servable.go: WaitServable and Subscribe
	sharding      *sharding         // sharding.go: the fleet status merged with other replicas'
	versions      *versions         // versions.go: GraphRevision records
	clusterSource *clusterSource    // provider.go: what engages the clusters
	values        *clusterValues    // cluster_values.go: the platform's per-cluster values
	hubGraphs     *hubgraph.Runtime // hubgraphs.go: graphs with targets, served on the hub
	changed       *statusChanges    // setup.go: graphs whose RGD status is to be rewritten soon
	pull          *pullClusters     // pull.go: clusters served through an agent inside each
	counts        *countChanges     // fleet_truth.go: instance counts' changes, told to changed

	// planner decides placement and rollout waves (rollouts.planner);
	// rollouts connects it and the GraphRollout controller to the hub.
	// See rollout.go.
	planner  *rollout.Planner
	rollouts *rollouts

	// ctx bounds background removals and departures; stop ends it when the
	// manager stops, under registry.mu (see remover.stopAll).
	ctx  context.Context
	stop context.CancelFunc
	// workersSet: Options.Instances.Workers was given, so the manager's
	// MaxConcurrentReconciles does not replace it (controller_options.go).
	workersSet bool
	// steps, when set, is told how long each step of registering and
	// fanning out a graph takes (benchmarks; see internal/steps).
	steps atomic.Pointer[steps.Func]
}

// NewHub returns a Hub. It serves the clusters that the provider of the
// manager it is set up with engages (mgr.GetProvider()): pass nil to use
// that provider, as the multicluster-runtime idiom has it. A non-nil
// provider must be the manager's, or SetupWithManager returns
// ErrProviderMismatch; Run makes its manager with it. With no provider
// anywhere the Hub runs in single-cluster mode: the manager's own cluster is
// the hub and the only spoke, served by the same code.
func NewHub(provider multicluster.Provider, opts Options) (*Hub, error) {
	if err := checkHubOwned(opts.Instances); err != nil {
		return nil, err
	}
	workersSet := opts.Instances.Workers > 0
	opts = opts.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	h := &Hub{
		provider: provider,
		opts:     opts,
		registry: newRegistry(opts),
		changed:  newStatusChanges(),
		ctx:      ctx,
		stop:     stop,

		workersSet: workersSet,
	}
	h.registrar = &registrar{h: h, compiles: newCompiles(ctx, opts.Compile.Timeout, h.changed.notify)}
	h.remover = &remover{h: h}
	h.departures = &departures{h: h}
	h.servable = &servability{h: h}
	h.sharding = &sharding{h: h}
	h.versions = &versions{h: h}
	h.clusterSource = &clusterSource{h: h, noClusterWarning: defaultNoClusterWarning}
	h.values = &clusterValues{h: h}
	h.pull = newPullClusters(h)
	h.counts = newCountChanges(h.changed.notify) // fleet_truth.go
	// The Hub's own parts of the instances' options (Options.Instances
	// says which): the rest is the caller's, defaults filled in.
	instances := opts.Instances
	instances.ClusterLabels = h.clusterSource.labels // cluster_labels.go
	instances.ClusterValues = h.values.forCluster    // cluster_values.go
	instances.LocalClusterName = opts.Fleet.LocalClusterName
	instances.CountsChanged = h.counts.changed
	h.hubGraphs = h.newHubGraphs(instances) // hubgraphs.go
	h.rollouts = newRollouts(h)
	h.planner = h.rollouts.planner
	h.crdFanOut = newCRDFanOut(h, provider) // fanout.go
	h.runtime = spoke.New(instances)
	h.runtime.SetGate(h.gate)
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
// by Options.Compile.Limits and Options.Compile.Timeout, after the lookups of its
// kinds' schemas on the hub (at most two minutes; a failed lookup returns
// an error wrapping graph.ErrSchemaUnavailable, not remembered). ctx
// bounds the wait. A spec that failed to
// compile is remembered: registering it again returns the same error
// without compiling, until the spec (or the hub's schema of a kind it
// uses) changes.
func (h *Hub) RegisterGraph(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) error {
	_, err := h.registrar.register(ctx, rgd, fromGo)
	return err
}

// UnregisterGraph stops serving the named graph, registered with
// RegisterGraph, and removes it from every cluster in the background: the
// admission policy goes from every spoke at once, so no new instance gets
// the runtime's finalizer. Then, by default, instances already holding it
// keep being finalized when deleted (their children are deleted; nothing
// else is reconciled) until none is left; with Options.RGDs.OrphanInstances they
// are released instead (the finalizer is taken off, children stay). With
// Options.CRDs.DeleteOnUnregister, the CRD is then deleted from every spoke
// that has no instance left (from the hub, for a hub graph). A spoke that cannot be reached is retried
// with backoff until it is done or the manager stops.
//
// UnregisterGraph returns once the removal has started. Removals live in
// memory: if the process ends before one is done, register and unregister
// the graph again after the restart to finish it. Unregistering an unknown
// graph is a no-op; a graph the RGD controller registered is refused with
// ErrNameTaken (delete its RGD instead).
func (h *Hub) UnregisterGraph(_ context.Context, name string) error {
	return h.registrar.unregister(name)
}

// FleetStatus returns the named graph's state on every cluster this Hub
// serves (with a sharded coordinator: the clusters this replica owns; the
// RGD's status and the replicas' records cover them all): per cluster,
// its CRD state, the instances and how many are ready and in ERROR, the
// revision serving it, the one it should serve (as the graph's rollout
// decides) and why either is not the latest. It is empty for a graph not
// registered. For a hub graph (one with targets) it counts the graph's
// instances, which live on the hub, and lists in Targets each cluster
// they write to, with their counts and its reachability.
func (h *Hub) FleetStatus(name string) GraphStatus { return h.clusterStatus(name) }

// Graphs returns the names of the registered graphs.
func (h *Hub) Graphs() []string { return h.names() }

// Run is the standalone way to run a Hub: it makes a multicluster manager
// for the hub cluster at cfg with the Hub's provider, sets the provider up
// in it when the provider needs that (it has a
// SetupWithManager(mcmanager.Manager) error method, as secret.Provider
// does), sets the Hub up and runs it until ctx is cancelled. Metrics and
// health endpoints are off; embed the Hub with SetupWithManager to choose
// them. The manager's scheme is its own (runScheme), never client-go's
// process-wide one.
func (h *Hub) Run(ctx context.Context, cfg *rest.Config) error {
	scheme, err := runScheme()
	if err != nil {
		return err
	}
	mgr, err := mcmanager.New(cfg, h.provider, manager.Options{
		Scheme:                 scheme,
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
