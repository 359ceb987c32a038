package instance

import (
	"context"
	"strings"
	"time"

	"github.com/go-logr/logr"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/crdschema"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// DefaultDeletionPoll is Config.DeletionPoll's default.
const DefaultDeletionPoll = 5 * time.Second

// Config is what a driver gives New: the graph, where its instances live,
// and how to reach back to the driver.
type Config struct {
	// Graph is the compiled graph served. Required.
	Graph *graph.Graph
	// Options are the serving options; New fills in their defaults.
	Options Options
	// Home is the cluster the instances live in: their status, finalizer
	// and events are written there, and a gone instance is confirmed
	// there. Required.
	Home *Cluster
	// Context ends the engine: its watches' handlers are removed, its
	// informers and timers stopped. Required.
	Context context.Context
	// Enqueue asks the driver to reconcile the instance under key.
	// Required.
	Enqueue func(types.NamespacedName)
	// OwnerLabels are labels every child carries besides the contract's,
	// and that an object must carry too to be one of this engine's
	// children: hub graphs name the hub that wrote them. Defaults to none.
	OwnerLabels map[string]string
	// DeletionPoll bounds how long a deletion that waits for a child to
	// go looks again. Defaults to DefaultDeletionPoll.
	DeletionPoll time.Duration
	// AbandonAfter is how long a deletion waits for a cluster other than
	// Home that it cannot reach before it goes on without it, leaving the
	// instance's children there (abandon.go). Defaults to 0: it waits.
	AbandonAfter time.Duration
	// RetryBase is the first backoff of the orphanage's failed looks.
	// Defaults to 200ms.
	RetryBase time.Duration
	// Defaults is the instance schema whose defaults every instance read
	// gets (Defaulted); a driver builds it once per graph. Defaults to
	// none.
	Defaults *structuralschema.Structural
	// Reads are the nodes whose answers something reads (ReadNodes); a
	// driver that makes many engines of one graph builds it once.
	// Defaults to ReadNodes(Graph).
	Reads map[string]bool
	// InstancesListed reports whether the driver's instance watch holds
	// every instance now: until it does, no child is condemned as an
	// orphan. Defaults to always.
	InstancesListed func() bool
	// Released reports whether the graph is being removed with its
	// instances released: then no orphan is collected. Defaults to never.
	Released func() bool
	// WatchHealthChanged is called when the watch of a kind the engine
	// uses starts or stops failing in one of its clusters, for the driver
	// to reconcile its instances again (their ResourcesWatched condition).
	// Defaults to nothing.
	WatchHealthChanged func()
}

// Engine serves the instances of one graph for one driver: the spoke
// runtime has one per graph version and cluster, hub graphs one per
// graph. Its methods are safe for concurrent use; a driver reconciles one
// instance at a time in one engine (its queue sees to that), and several
// instances at once.
type Engine struct {
	g        *graph.Graph
	opts     Options
	cfg      Config
	log      logr.Logger
	ctx      context.Context
	home     *Cluster
	owner    owner
	confine  confinement
	kinds    kindSet
	reads    map[string]bool
	defaults *structuralschema.Structural

	places placeSet

	instances *Instances
	writes    *Writes
	refs      *externalRefs
	resync    *resyncSchedule
	orphans   *orphanage
}

// New returns the engine of cfg.Graph. It starts nothing: watches start
// with the first reconcile that needs them, orphans with StartOrphans.
func New(cfg Config) *Engine {
	cfg.Options = cfg.Options.WithDefaults()
	if cfg.DeletionPoll <= 0 {
		cfg.DeletionPoll = DefaultDeletionPoll
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 200 * time.Millisecond
	}
	g := cfg.Graph
	if cfg.Reads == nil {
		cfg.Reads = ReadNodes(g)
	}
	e := &Engine{
		g: g, opts: cfg.Options, cfg: cfg, ctx: cfg.Context, home: cfg.Home,
		log:      cfg.Options.Logger,
		owner:    newOwner(g, cfg.OwnerLabels),
		confine:  newConfinement(g.Name, cfg.Options),
		kinds:    contract.GraphKinds(g),
		reads:    cfg.Reads,
		defaults: cfg.Defaults,
		places:   placeSet{m: map[string]*place{}},
		writes:   NewWrites(),
		resync:   newResyncSchedule(cfg.Options.Resync),
	}
	e.refs = newExternalRefs(e)
	e.orphans = newOrphanage(e)
	e.instances = newInstances(e.orphans)
	return e
}

// ReadNodes is the set of g's nodes whose observed value g reads
// (graph.Graph.Reads): only their children's answers are kept. A driver
// that makes many engines of one graph may compute it once; New does.
func ReadNodes(g *graph.Graph) map[string]bool {
	out := map[string]bool{}
	for _, n := range g.Nodes {
		if g.Reads(n.ID) {
			out[n.ID] = true
		}
	}
	return out
}

// Graph is the graph served.
func (e *Engine) Graph() *graph.Graph { return e.g }

// Home is the cluster the instances live in.
func (e *Engine) Home() *Cluster { return e.home }

// Writes is the memory of the engine's own writes of instances, which a
// driver's instance watch consults (writes.go).
func (e *Engine) Writes() *Writes { return e.writes }

// Stop ends what the engine runs in the background and waits for an
// orphan collection under way (its calls end with the engine's context,
// which the caller has cancelled or is about to).
func (e *Engine) Stop() {
	e.orphans.stop()
	for _, p := range e.places.takeAll() {
		p.stop()
	}
}

// Defaulted sets the defaults of the graph's instance schema on inst, a
// copy the caller owns, as the API server would on a fresh read. The API
// server applies a CRD's defaults each time it reads an object, so an
// instance a cache listed before a graph update added a defaulted field
// lacks it until the instance next changes, and the new version's
// expressions would fail on it ("no such key") where a fresh read, as kro
// makes after an update, has the default. This also covers caches that
// cannot drop an informer to list afresh (kcp's virtual workspaces share
// theirs).
func (e *Engine) Defaulted(inst *unstructured.Unstructured) *unstructured.Unstructured {
	crdschema.Default(inst.Object, e.defaults)
	return inst
}

// Suspended reports whether the instance asks not to be reconciled: either
// annotation (contract.AnnotationReconcile, or kro's) set to "suspended"
// or kro's legacy "disabled", in any case, as kro v0.9.4 accepts them. A
// suspended instance is still deleted when asked.
func Suspended(u *unstructured.Unstructured) bool {
	a := u.GetAnnotations()
	return isSuspendValue(a[contract.AnnotationReconcile]) || isSuspendValue(a[contract.AnnotationKroReconcile])
}

func isSuspendValue(v string) bool {
	return strings.EqualFold(v, contract.ReconcileSuspended) || strings.EqualFold(v, reconcileLegacyDisabled)
}

// reconcileLegacyDisabled is kro's legacy alias of contract.ReconcileSuspended.
const reconcileLegacyDisabled = "disabled"

// callCtx bounds one call to a cluster by Options.CallTimeout.
func (e *Engine) callCtx() (context.Context, context.CancelFunc) {
	return CallContext(e.ctx, e.opts.CallTimeout)
}

func (e *Engine) enqueue(key types.NamespacedName) {
	if e.ctx.Err() == nil {
		e.cfg.Enqueue(key)
	}
}

func keyOf(u interface {
	GetNamespace() string
	GetName() string
}) types.NamespacedName {
	return types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
}
