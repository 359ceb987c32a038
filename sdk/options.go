package sdk

import (
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fleetgraph/fleetgraph/hub"
	rgdctrl "github.com/fleetgraph/fleetgraph/internal/rgd"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// Options configures a Hub. The zero value is usable: every field documents
// its default.
type Options struct {
	// DisableRGDController turns off the controller that watches
	// ResourceGraphDefinition objects on the hub cluster and registers them.
	// Defaults to false: the controller runs whenever the hub cluster serves
	// the kro.run/v1alpha1 ResourceGraphDefinition kind (see InstallRGDCRD),
	// and claims the RGDs RGDSelector picks. Graphs can always be registered
	// from Go with RegisterGraph; the controller never removes those.
	//
	// The controller reads RGDs through the manager's client and cache when
	// the manager's scheme knows the kro.run/v1alpha1 types (register them
	// with v1alpha1.AddToScheme, as for any controller-runtime type), else
	// through a client and cache of its own, with a scheme of its own, on
	// the hub cluster. The Hub never adds types to a scheme it did not make:
	// a manager given no scheme uses client-go's process-wide one.
	DisableRGDController bool
	// InstallRGDCRD applies the ResourceGraphDefinition CRD to the hub
	// cluster when the manager starts (not in SetupWithManager, which does
	// no I/O), labelled as managed by fleetgraph; if that fails, the
	// manager's Start returns the error. A
	// CRD of that name that another manager installed (kro's, for one) is
	// never overwritten: it is logged and used as it is. Defaults to false:
	// installing APIs is left to the platform.
	InstallRGDCRD bool
	// RGDSelector picks, by label, the ResourceGraphDefinition objects on
	// the hub this Hub claims: it registers them, puts its finalizer on
	// them and writes their status. Others are never written, so a hub
	// cluster can be shared with kro or another Hub (give each a disjoint
	// selector, e.g. a label such as fleetgraph.dev/hub=<name>). Defaults to
	// nil: every RGD is claimed. An RGD that stops matching is released
	// like a deleted one.
	RGDSelector labels.Selector
	// OrphanInstances makes the removal of a graph (UnregisterGraph, or
	// deleting or no longer claiming its RGD) release its instances: the
	// runtime's finalizer is taken off them and their children are left in
	// place. Defaults to false: instances that hold the finalizer keep
	// being finalized (children deleted) when deleted, and the removal
	// (and the RGD's finalizer) waits until none is left. An RGD can ask
	// for orphaning alone with the annotation fleetgraph.dev/orphan-instances
	// set to "true" (v1alpha1.AnnotationOrphanInstances).
	OrphanInstances bool
	// Workers is the number of instances of one graph reconciled at once,
	// across all clusters. Defaults to the manager's
	// MaxConcurrentReconciles (manager.Options.Controller) if set, else 8.
	Workers int
	// FieldManager is the server-side apply field manager for CRDs and
	// children. Defaults to "fleetgraph".
	FieldManager string
	// ItemConcurrency is how many items of one forEach resource are applied
	// at once for one instance. Defaults to 8.
	ItemConcurrency int
	// InstanceResync is how often every instance is fully re-applied, so
	// that drift whose watch event was lost is put back (each instance adds
	// up to 20% jitter). A negative value turns it off. Defaults to
	// 10 minutes.
	InstanceResync time.Duration
	// OrphanGrace is how long a child whose instance no longer exists (its
	// finalizer was removed by hand, or its deletion was interrupted) is
	// left before the runtime deletes it, on a spoke or, for a hub
	// graph, on whichever cluster holds it: only a child labelled as the
	// graph's and written by FieldManager, once a live read confirms that
	// its instance is gone, and never one left in place by a release
	// (OrphanInstances, DepartureGrace, Placement). Negative turns the
	// collection off. Defaults to 30 seconds.
	OrphanGrace time.Duration
	// Targets say where hub graphs (graphs whose resources carry a
	// target) may write; see TargetOptions. Defaults to its zero value:
	// literal targets naming engaged clusters only.
	Targets TargetOptions
	// AdoptUnowned lets an instance (of a spoke graph or a hub graph)
	// take over an existing object with a child's name that carries no
	// fleetgraph owner label (kro adopts such objects). An object labelled
	// for another instance is never taken over, nor one that copies this
	// instance's labels without fleetgraph having written it. Defaults to
	// false: the instance reports an OwnershipConflict.
	AdoptUnowned bool
	// ConfineToNamespace keeps each instance's children and external
	// references in its own namespace: a child rendered in another
	// namespace, or cluster-scoped, is not written; an externalRef naming
	// another namespace or a cluster-scoped kind is not read, and one by
	// selector without a namespace selects (and watches) in the instance's
	// namespace only; a cluster-scoped instance (an RGD with scope: Cluster)
	// writes and reads nothing unless its graph is one of
	// ClusterScopedGraphs. A refused instance goes to ERROR (reason
	// OutsideNamespace) naming the resource id and the object. The spoke
	// runtime enforces it as it writes and reads, so RGDs are accepted
	// either way. Defaults to false, as kro, which lets templates and
	// references use any namespace.
	ConfineToNamespace bool
	// ClusterScopedGraphs names the graphs (RGD names) whose cluster-scoped
	// instances ConfineToNamespace lets through, unconfined as in kro:
	// graphs the platform writes and trusts, such as one that sets up each
	// tenant's namespace. List only names tenants cannot register (graphs
	// registered from Go, or RGDs that RGDSelector claims only from the
	// platform). Defaults to none. Without ConfineToNamespace it has no
	// effect.
	ClusterScopedGraphs []string
	// DisableAdmissionPolicy stops the hub from installing, with each CRD,
	// the MutatingAdmissionPolicy that stamps the finalizer on new
	// instances; the runtime then adds it with one more write per new
	// instance. Defaults to false: the policy is installed wherever the
	// spoke serves MutatingAdmissionPolicy, and bound only once it works.
	DisableAdmissionPolicy bool
	// SchemaResolver gives the compiler the OpenAPI schemas of child kinds,
	// so expressions that read them and literal template values are
	// type-checked, and scope rules are enforced, as kro does. Defaults to a
	// resolver reading the hub cluster's OpenAPI, set up by SetupWithManager;
	// a kind the hub does not serve (a CRD only the spokes have) is then
	// typed dynamically. Graphs registered before SetupWithManager are
	// compiled without it.
	SchemaResolver graph.SchemaResolver
	// DisableSchemaResolver turns the default SchemaResolver off: child kinds
	// are typed dynamically and checked only when instances are reconciled.
	// Defaults to false.
	DisableSchemaResolver bool
	// Strict compiles every graph as kro v0.9.4 would: fleetgraph's
	// extensions (graph.Graph.Extensions) are refused instead of listed.
	// Defaults to false.
	Strict bool
	// Limits bound what one tenant's RGD may make the compiler build (the
	// schema as custom types expand, the generated CRD) and what its
	// instances may cost the spokes that serve them: each expression's
	// cost, time and output, each reconcile's evaluation budget, children,
	// rendered bytes and status size (see graph.Limits for every field and
	// its default). Every graph of this Hub is compiled with them and
	// carries them to its spokes.
	// Defaults to graph.Limits{}: every field at its documented default.
	Limits graph.Limits
	// CompileTimeout bounds one compile of one graph. A compile that takes
	// longer refuses the RGD (GraphAccepted=False, naming this option) and,
	// like any other compile failure, is not tried again until the RGD's
	// spec changes (or the hub restarts). Compiles run outside
	// the registration of other graphs, so a slow one delays only its own
	// graph. The schemas of the graph's kinds are looked up on the hub
	// before the clock starts (for at most two minutes): a slow API server
	// is not the spec's fault, and a lookup that fails is retried, not
	// remembered. Defaults to DefaultCompileTimeout (30 seconds).
	CompileTimeout time.Duration
	// DeleteCRDsOnUnregister removes a graph's CRD from every spoke that has
	// no instance of it left once the graph's removal is otherwise done
	// (see UnregisterGraph); a spoke that cannot be reached is retried. A
	// hub graph's CRD is removed from the hub the same way.
	// Defaults to false: CRDs stay, so no instance can be lost by accident.
	DeleteCRDsOnUnregister bool
	// EstablishTimeout bounds one wait for a CRD to become established on a
	// spoke; the attempt is then retried with backoff. Defaults to
	// 60 seconds.
	EstablishTimeout time.Duration
	// StatusResync is how often each RGD's fleet status is refreshed.
	// Defaults to DefaultStatusResync (10 seconds).
	StatusResync time.Duration
	// Probe configures the reachability probe of every engaged spoke: one
	// that stops answering is reported Unreachable in FleetStatus and on
	// the RGD within Probe.Interval+Probe.Timeout. Both default
	// to 5 seconds.
	Probe ProberOptions
	// DepartureGrace is how long a cluster that left the fleet (its
	// kubeconfig Secret deleted, say) may take to come back, as a rotated
	// kubeconfig does at once, before the hub cleans up after it: removes
	// every graph's admission policy there and releases the instances (our
	// finalizer taken off, children left), so that no delete is held by a
	// hub that will not serve the cluster again. A cluster that the
	// provider still knows after the grace (being engaged again) is waited
	// for; one that cannot be reached keeps both (see the README). Negative
	// turns the clean-up off. Defaults to DefaultDepartureGrace.
	DepartureGrace time.Duration
	// Placement, if set, decides which clusters serve which graph, by the
	// labels the provider gives each cluster (see ClusterLabeler); a
	// GraphRollout's cluster selector narrows it further. A cluster that
	// stops being placed is served no more: its CRD, instances and
	// children stay, and its instances are released (our finalizer taken
	// off). Defaults to nil: every graph is placed on every cluster.
	Placement PlacementFunc
	// DisableRollouts turns off the GraphRollout controller, which installs
	// the fleetgraph.dev GraphRollout CRD on the hub and rolls revisions out
	// in waves. Defaults to false: it runs, and a graph without a
	// GraphRollout reaches every placed cluster at once. While it cannot
	// read the GraphRollouts (the hub cluster does not answer), no revision
	// is served anywhere: set it for a hub with no hub cluster to read.
	DisableRollouts bool
	// DisableClusterValues turns off the ClusterValues controller, which
	// installs the fleetgraph.dev ClusterValues CRD on the hub and gives
	// graphs the platform's per-cluster values (cluster.values). Defaults
	// to false: it runs, on every replica, and a graph that reads
	// cluster.values is served on a cluster only once the objects were
	// read. Disabled, cluster.values is empty everywhere.
	DisableClusterValues bool
	// LocalClusterName is what cluster.name holds in graphs served on the
	// manager's own cluster, the cluster multicluster-runtime names ""
	// (single-cluster mode: a nil provider); FleetStatus, metrics and
	// events keep calling it "". Set it to the name the platform knows the
	// hub cluster by. Defaults to DefaultLocalClusterName.
	LocalClusterName string
	// RolloutResync is how often every GraphRollout is looked at (and
	// cluster labels re-read). Defaults to 1 second.
	RolloutResync time.Duration
	// Logger defaults to controller-runtime's log.Log named "fleetgraph".
	Logger logr.Logger
	// Pull configures pull mode: clusters served through an agent inside
	// each, which the hub never connects to (see PullOptions). Defaults to
	// off.
	Pull PullOptions
	// Replica names this Hub among the replicas that share one hub cluster
	// (see NewShardedCoordinator); use the same ID as ShardingOptions.ID.
	// Each replica then keeps a record of the clusters it serves (a
	// ConfigMap fleetgraph-<rgd>-<replica> in ReplicaNamespace) and writes
	// on the RGD the union of its own view and the other replicas' live
	// records, so that replicas do not overwrite each other's clusters.
	// The clusters of a replica that stopped (its peer Lease, in
	// ReplicaNamespace, expired) are shown as such (reason ReplicaGone)
	// until another replica takes them over. Defaults to "": the only
	// replica, whose view is the fleet; it keeps its record all the same
	// (fleetgraph-<rgd>-hub), since `fleetgraph status` reads every
	// cluster there.
	Replica string
	// ReplicaNamespace holds the replicas' status records (a lone hub's
	// too). Defaults to "kube-system".
	ReplicaNamespace string
	// ReplicaStatusTTL is how long a replica's record counts after its
	// last renewal (every ReplicaStatusTTL/3 at most, and at each status
	// change): longer than the sharding takeover bound, so that a dead
	// replica's clusters are counted until their new owner has them. An
	// expired record (a dead replica's, a deleted graph's) is deleted by
	// another replica within a further ReplicaStatusTTL/3.
	// Defaults to 60 seconds.
	ReplicaStatusTTL time.Duration
}

// DefaultStatusResync is Options.StatusResync's default.
const DefaultStatusResync = rgdctrl.DefaultResync

// DefaultDepartureGrace is Options.DepartureGrace's default.
const DefaultDepartureGrace = 30 * time.Second

// DefaultLocalClusterName is the default of Options.LocalClusterName: a
// name an expression can join and compare like any other, where the
// manager's own name for its cluster, "", would leave "web-" or an empty
// label value behind.
const DefaultLocalClusterName = "local"

func (o Options) withDefaults() Options {
	if o.Workers == 0 {
		o.Workers = spoke.DefaultWorkers
	}
	if o.FieldManager == "" {
		o.FieldManager = hub.DefaultFieldManager
	}
	if o.LocalClusterName == "" {
		o.LocalClusterName = DefaultLocalClusterName
	}
	if o.EstablishTimeout == 0 {
		o.EstablishTimeout = hub.DefaultEstablishTimeout
	}
	if o.StatusResync == 0 {
		o.StatusResync = DefaultStatusResync
	}
	if o.CompileTimeout <= 0 {
		o.CompileTimeout = DefaultCompileTimeout
	}
	o.Limits = o.Limits.WithDefaults()
	if o.DepartureGrace == 0 {
		o.DepartureGrace = DefaultDepartureGrace
	}
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("fleetgraph")
	}
	return o
}
