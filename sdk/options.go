package sdk

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	rgdctrl "github.com/fleetgraph/fleetgraph/internal/rgd"
	"github.com/fleetgraph/fleetgraph/internal/rollout"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// Options configures a Hub. The zero value is usable: every field is one
// concern, and every field of those documents its default, filled in by
// NewHub.
type Options struct {
	// RGDs configures the controller that registers the
	// ResourceGraphDefinition objects of the hub cluster, and what the
	// removal of a graph does to its instances.
	RGDs RGDOptions
	// Instances configures how every graph's instances are served, on the
	// spokes and, for hub graphs, on the hub: the same engine serves both.
	// Every field of spoke.Options applies with its documented default,
	// except:
	//   - FieldManager is also the field manager of every other write the
	//     Hub makes (CRDs, admission policies, revisions);
	//   - Workers defaults to the manager's MaxConcurrentReconciles
	//     (manager.Options.Controller) when that is set, else to
	//     spoke.DefaultWorkers;
	//   - CallTimeout bounds the calls to spokes; a hub graph's calls to
	//     its targets are bounded by Targets.CallTimeout instead;
	//   - Logger defaults to Logger named "spoke" (and "hubgraph");
	//   - ClusterLabels, ClusterValues, LocalClusterName and CountsChanged
	//     are the Hub's to set (from its provider, its ClusterValues
	//     objects, Fleet.LocalClusterName and its fleet status): NewHub
	//     refuses a value given there with ErrHubOwnedOption.
	Instances spoke.Options
	// Compile configures the compiler every graph of this Hub goes
	// through: schemas, strictness, limits and time.
	Compile CompileOptions
	// CRDs configures the generated CRDs on the spokes (and, for hub
	// graphs, on the hub): how long they may take to be established,
	// whether they go with their graph, and the admission policy beside
	// them.
	CRDs CRDOptions
	// Fleet configures how the Hub watches the clusters it serves: the
	// fleet status, the reachability probe, departures, the local
	// cluster's name and the per-cluster values.
	Fleet FleetOptions
	// Rollouts configures where graphs are placed and how new revisions
	// roll out.
	Rollouts RolloutOptions
	// Replicas configures this Hub as one of several replicas that share
	// a hub cluster (see NewShardedCoordinator).
	Replicas ReplicaOptions
	// Targets say where hub graphs (graphs whose resources carry a
	// target) may write; see TargetOptions. Defaults to its zero value:
	// literal targets naming engaged clusters only.
	Targets TargetOptions
	// Pull configures pull mode: clusters served through an agent inside
	// each, which the hub never connects to (see PullOptions). Defaults to
	// off.
	Pull PullOptions
	// Logger defaults to controller-runtime's log.Log named "fleetgraph".
	Logger logr.Logger
}

// RGDOptions configure the RGD controller and graph removal.
type RGDOptions struct {
	// DisableController turns off the controller that watches
	// ResourceGraphDefinition objects on the hub cluster and registers them.
	// Defaults to false: the controller runs whenever the hub cluster serves
	// the kro.run/v1alpha1 ResourceGraphDefinition kind (see InstallCRD),
	// and claims the RGDs Selector picks. Graphs can always be registered
	// from Go with RegisterGraph; the controller never removes those.
	//
	// The controller reads RGDs through the manager's client and cache when
	// the manager's scheme knows the kro.run/v1alpha1 types (register them
	// with v1alpha1.AddToScheme, as for any controller-runtime type), else
	// through a client and cache of its own, with a scheme of its own, on
	// the hub cluster. The Hub never adds types to a scheme it did not make:
	// a manager given no scheme uses client-go's process-wide one.
	DisableController bool
	// InstallCRD applies the ResourceGraphDefinition CRD to the hub
	// cluster when the manager starts (not in SetupWithManager, which does
	// no I/O), labelled as managed by fleetgraph; if that fails, the
	// manager's Start returns the error. A CRD of that name that another
	// manager installed (kro's, for one) is never overwritten: it is logged
	// and used as it is. Defaults to false: installing APIs is left to the
	// platform.
	InstallCRD bool
	// Selector picks, by label, the ResourceGraphDefinition objects on
	// the hub this Hub claims: it registers them, puts its finalizer on
	// them and writes their status. Others are never written, so a hub
	// cluster can be shared with kro or another Hub (give each a disjoint
	// selector, e.g. a label such as fleetgraph.dev/hub=<name>). Defaults to
	// nil: every RGD is claimed. An RGD that stops matching is released
	// like a deleted one.
	Selector labels.Selector
	// OrphanInstances makes the removal of a graph (UnregisterGraph, or
	// deleting or no longer claiming its RGD) release its instances: the
	// runtime's finalizer is taken off them and their children are left in
	// place. Defaults to false: instances that hold the finalizer keep
	// being finalized (children deleted) when deleted, and the removal
	// (and the RGD's finalizer) waits until none is left. An RGD can ask
	// for orphaning alone with the annotation fleetgraph.dev/orphan-instances
	// set to "true" (v1alpha1.AnnotationOrphanInstances).
	OrphanInstances bool
}

// CompileOptions configure the compiler.
type CompileOptions struct {
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
	// Timeout bounds one compile of one graph. A compile that takes
	// longer refuses the RGD (GraphAccepted=False, naming this option) and,
	// like any other compile failure, is not tried again until the RGD's
	// spec changes (or the hub restarts). Compiles run outside
	// the registration of other graphs, so a slow one delays only its own
	// graph. The schemas of the graph's kinds are looked up on the hub
	// before the clock starts (for at most two minutes): a slow API server
	// is not the spec's fault, and a lookup that fails is retried, not
	// remembered. Defaults to DefaultCompileTimeout (30 seconds).
	Timeout time.Duration
}

// CRDOptions configure the generated CRDs and what is installed beside
// them. They are applied with Instances.FieldManager.
type CRDOptions struct {
	// DeleteOnUnregister removes a graph's CRD from every spoke that has
	// no instance of it left once the graph's removal is otherwise done
	// (see UnregisterGraph); a spoke that cannot be reached is retried. A
	// hub graph's CRD is removed from the hub the same way.
	// Defaults to false: CRDs stay, so no instance can be lost by accident.
	DeleteOnUnregister bool
	// EstablishTimeout bounds one wait for a CRD to become established on a
	// spoke; the attempt is then retried with backoff. Defaults to
	// hub.DefaultEstablishTimeout (60 seconds).
	EstablishTimeout time.Duration
	// DisableAdmissionPolicy stops the hub from installing, with each CRD,
	// the MutatingAdmissionPolicy that stamps the finalizer on new
	// instances; the runtime then adds it with one more write per new
	// instance. Defaults to false: the policy is installed wherever the
	// spoke serves MutatingAdmissionPolicy, and bound only once it works.
	DisableAdmissionPolicy bool
}

// FleetOptions configure how the Hub watches the clusters it serves.
type FleetOptions struct {
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
	// for; one that cannot be reached keeps both (see the docs). Negative
	// turns the clean-up off. Defaults to DefaultDepartureGrace (30
	// seconds).
	DepartureGrace time.Duration
	// LocalClusterName is what cluster.name holds in graphs served on the
	// manager's own cluster, the cluster multicluster-runtime names ""
	// (single-cluster mode: a nil provider); FleetStatus, metrics and
	// events keep calling it "". Set it to the name the platform knows the
	// hub cluster by. Defaults to DefaultLocalClusterName ("local").
	LocalClusterName string
	// DisableClusterValues turns off the ClusterValues controller, which
	// installs the fleetgraph.dev ClusterValues CRD on the hub and gives
	// graphs the platform's per-cluster values (cluster.values). Defaults
	// to false: it runs, on every replica, and a graph that reads
	// cluster.values is served on a cluster only once the objects were
	// read. Disabled, cluster.values is empty everywhere.
	DisableClusterValues bool
}

// RolloutOptions configure placement and the GraphRollout controller.
type RolloutOptions struct {
	// Placement, if set, decides which clusters serve which graph, by the
	// labels the provider gives each cluster (see ClusterLabeler); a
	// GraphRollout's cluster selector narrows it further. A cluster that
	// stops being placed is served no more: its CRD, instances and
	// children stay, and its instances are released (our finalizer taken
	// off). Defaults to nil: every graph is placed on every cluster.
	Placement PlacementFunc
	// Disable turns off the GraphRollout controller, which installs
	// the fleetgraph.dev GraphRollout CRD on the hub and rolls revisions out
	// in waves. Defaults to false: it runs, and a graph without a
	// GraphRollout reaches every placed cluster at once. While it cannot
	// read the GraphRollouts (the hub cluster does not answer), no revision
	// is served anywhere: set it for a hub with no hub cluster to read.
	Disable bool
	// Resync is how often every GraphRollout is looked at (and cluster
	// labels and the PlacementDecisions rollouts follow re-read). Defaults
	// to DefaultRolloutResync (1 second).
	Resync time.Duration
	// PlacementDecisions configures publishing each GraphRollout's
	// placement as a PlacementDecision. Defaults to its zero value:
	// nothing is published. (Following a PlacementDecision needs no
	// option: a GraphRollout's spec.placementDecision names it.)
	PlacementDecisions PlacementDecisionOptions
}

// PlacementDecisionOptions configure publishing placements as
// PlacementDecisions (multicluster.x-k8s.io/v1alpha1, KEP-5313), so that
// other tools read the same answer.
type PlacementDecisionOptions struct {
	// Namespace, when set, is the hub namespace where, at every look, the
	// clusters each GraphRollout places its graph on (its
	// status.clusters: placed, whether or not the latest revision has
	// reached them; held ones included) are published as the graph's
	// decision: slices of at most 100 clusters named <graph>-<index>,
	// labelled multicluster.x-k8s.io/decision-key and placement-key =
	// the graph's name, schedulerName "fleetgraph", each cluster by the
	// provider's name as its clusterProfileRef name. They follow every
	// change of placement, and are deleted when the GraphRollout goes or
	// its graph is unregistered. A PlacementDecision of a slice's name
	// that fleetgraph did not write is never overwritten: the graph is not
	// published and its rollout's PlacementPublished condition says why.
	// The PlacementDecision CRD must be served on the hub. Defaults to "":
	// nothing is published (and nothing published before is deleted).
	Namespace string
}

// ReplicaOptions configure this Hub's share of the fleet status when
// several replicas share one hub cluster.
type ReplicaOptions struct {
	// ID names this Hub among the replicas that share one hub cluster
	// (see NewShardedCoordinator); use the same ID as ShardingOptions.ID.
	// Each replica then keeps a record of the clusters it serves (a
	// ConfigMap fleetgraph-<rgd>-<replica> in Namespace) and writes
	// on the RGD the union of its own view and the other replicas' live
	// records, so that replicas do not overwrite each other's clusters.
	// The clusters of a replica that stopped (its peer Lease, in
	// Namespace, expired) are shown as such (reason ReplicaGone)
	// until another replica takes them over. Defaults to "": the only
	// replica, whose view is the fleet; it keeps its record all the same
	// (fleetgraph-<rgd>-hub), since `fleetgraph status` reads every
	// cluster there.
	ID string
	// Namespace holds the replicas' status records (a lone hub's
	// too). Defaults to DefaultReplicaNamespace ("kube-system").
	Namespace string
	// StatusTTL is how long a replica's record counts after its
	// last renewal (every StatusTTL/3 at most, and at each status
	// change): longer than the sharding takeover bound, so that a dead
	// replica's clusters are counted until their new owner has them. An
	// expired record (a dead replica's, a deleted graph's) is deleted by
	// another replica within a further StatusTTL/3.
	// Defaults to DefaultReplicaStatusTTL (60 seconds).
	StatusTTL time.Duration
}

// DefaultStatusResync is FleetOptions.StatusResync's default.
const DefaultStatusResync = rgdctrl.DefaultResync

// DefaultRolloutResync is RolloutOptions.Resync's default.
const DefaultRolloutResync = rollout.DefaultResync

// DefaultDepartureGrace is FleetOptions.DepartureGrace's default.
const DefaultDepartureGrace = 30 * time.Second

// DefaultReplicaNamespace is ReplicaOptions.Namespace's default.
const DefaultReplicaNamespace = "kube-system"

// DefaultLocalClusterName is the default of FleetOptions.LocalClusterName:
// a name an expression can join and compare like any other, where the
// manager's own name for its cluster, "", would leave "web-" or an empty
// label value behind.
const DefaultLocalClusterName = "local"

// checkHubOwned refuses the instance options the Hub sets itself.
func checkHubOwned(o spoke.Options) error {
	var set []string
	if o.ClusterLabels != nil {
		set = append(set, "ClusterLabels")
	}
	if o.ClusterValues != nil {
		set = append(set, "ClusterValues")
	}
	if o.LocalClusterName != "" {
		set = append(set, "LocalClusterName (set Fleet.LocalClusterName)")
	}
	if o.CountsChanged != nil {
		set = append(set, "CountsChanged")
	}
	if len(set) > 0 {
		return fmt.Errorf("%w: Options.Instances.%s", ErrHubOwnedOption, strings.Join(set, ", Options.Instances."))
	}
	return nil
}

// withDefaults fills in every default of o, in one place.
func (o Options) withDefaults() Options {
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("fleetgraph")
	}
	if o.Instances.Logger.GetSink() == nil {
		o.Instances.Logger = o.Logger.WithName("spoke")
	}
	o.Instances = spoke.Options(instance.Options(o.Instances).WithDefaults())
	o.Compile = o.Compile.withDefaults()
	o.CRDs = o.CRDs.withDefaults()
	o.Fleet = o.Fleet.withDefaults()
	o.Rollouts = o.Rollouts.withDefaults()
	o.Replicas = o.Replicas.withDefaults()
	return o
}

func (o CompileOptions) withDefaults() CompileOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultCompileTimeout
	}
	o.Limits = o.Limits.WithDefaults()
	return o
}

func (o CRDOptions) withDefaults() CRDOptions {
	if o.EstablishTimeout == 0 {
		o.EstablishTimeout = hub.DefaultEstablishTimeout
	}
	return o
}

func (o FleetOptions) withDefaults() FleetOptions {
	if o.StatusResync == 0 {
		o.StatusResync = DefaultStatusResync
	}
	if o.DepartureGrace == 0 {
		o.DepartureGrace = DefaultDepartureGrace
	}
	if o.LocalClusterName == "" {
		o.LocalClusterName = DefaultLocalClusterName
	}
	return o
}

func (o RolloutOptions) withDefaults() RolloutOptions {
	if o.Resync <= 0 {
		o.Resync = DefaultRolloutResync
	}
	return o
}

func (o ReplicaOptions) withDefaults() ReplicaOptions {
	if o.Namespace == "" {
		o.Namespace = DefaultReplicaNamespace
	}
	if o.StatusTTL == 0 {
		o.StatusTTL = DefaultReplicaStatusTTL
	}
	return o
}
