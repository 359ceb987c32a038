package sdk

import (
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fleetgraph/fleetgraph/hub"
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
	DisableRGDController bool
	// InstallRGDCRD applies the ResourceGraphDefinition CRD to the hub
	// cluster when the Hub is set up, labelled as managed by fleetgraph. A
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
	// across all clusters. Defaults to spoke.DefaultWorkers.
	Workers int
	// FieldManager is the server-side apply field manager for CRDs and
	// children. Defaults to "fleetgraph".
	FieldManager string
	// SchemaResolver gives the compiler the OpenAPI schemas of child kinds,
	// so expressions that read them are type-checked. Defaults to nil:
	// expressions reading children are checked dynamically (the instance
	// schema is always fully typed).
	SchemaResolver graph.SchemaResolver
	// DeleteCRDsOnUnregister removes a graph's CRD from every spoke that has
	// no instance of it left once the graph's removal is otherwise done
	// (see UnregisterGraph); a spoke that cannot be reached is retried.
	// Defaults to false: CRDs stay, so no instance can be lost by accident.
	DeleteCRDsOnUnregister bool
	// EstablishTimeout bounds one wait for a CRD to become established on a
	// spoke; the attempt is then retried with backoff. Defaults to
	// hub.DefaultEstablishTimeout.
	EstablishTimeout time.Duration
	// StatusResync is how often each RGD's fleet status is refreshed.
	// Defaults to hub.DefaultResync.
	StatusResync time.Duration
	// Probe configures the reachability probe of every engaged spoke: one
	// that stops answering is reported Unreachable in FleetStatus and on
	// the RGD within Probe.Interval+Probe.Timeout. Defaults to
	// hub.DefaultProbeInterval and hub.DefaultProbeTimeout.
	Probe hub.ProberOptions
	// Logger defaults to controller-runtime's log.Log named "fleetgraph".
	Logger logr.Logger
}

func (o Options) withDefaults() Options {
	if o.Workers == 0 {
		o.Workers = spoke.DefaultWorkers
	}
	if o.FieldManager == "" {
		o.FieldManager = hub.DefaultFieldManager
	}
	if o.EstablishTimeout == 0 {
		o.EstablishTimeout = hub.DefaultEstablishTimeout
	}
	if o.StatusResync == 0 {
		o.StatusResync = hub.DefaultResync
	}
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("fleetgraph")
	}
	return o
}
