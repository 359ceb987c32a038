package rgd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// DefaultResync is how often the RGD controller refreshes an RGD's fleet
// status (instance counts change without any event on the hub).
const DefaultResync = 10 * time.Second

// DefaultWorkers is Reconciler.Workers's default when the manager
// sets no MaxConcurrentReconciles: RGDs of different names are reconciled
// at once, so that one slow RGD (a compile waited for, a megabyte written)
// does not hold up the others. Each name is still reconciled by one worker
// at a time.
const DefaultWorkers = 4

// DefaultRemovalPoll is how often the RGD controller checks on the
// removal of a deleted RGD's graph (besides being told when it is done).
const DefaultRemovalPoll = 2 * time.Second

// Registry is what the RGD controller drives; sdk.Hub provides it. Every
// graph the controller registers is registered as coming from an RGD
// object, and Remove only ever removes those.
type Registry interface {
	// Register compiles rgd and serves it on every engaged cluster. It is a
	// no-op when the same spec is already served. A compile error leaves
	// what was served before in place. ErrNameTaken and ErrKindTaken
	// (wrapped) refuse the RGD. A compile still running after a short wait
	// returns ErrCompiling (wrapped), and the RGD's name comes on Changed
	// when it ends.
	Register(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (*graph.Graph, error)
	// Serving returns the graph served for the RGD of that name, or nil.
	Serving(name string) *graph.Graph
	// Revision returns the revision (GraphRevision number) of the graph
	// served for the RGD of that name; 0 when there is none or it is
	// unnumbered.
	Revision(name string) int64
	// Remove stops serving the graph registered from rgd, if any, and
	// starts removing it from every cluster in the background (idempotent).
	// It reports done once nothing of the graph is left to clean up, so the
	// RGD's finalizer can go; a graph another source registered counts as
	// done. rgd may carry only a name when the object is gone.
	Remove(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (done bool, err error)
	// Status is the graph's state across the fleet.
	Status(name string) hub.GraphStatus
}

// Reconciler turns the ResourceGraphDefinition objects it claims on the
// hub into registered graphs and writes back their status with kro's
// conditions (GraphAccepted, KindReady, ControllerReady, Ready), the
// topological order and the fleet summary. Claimed RGDs carry
// v1alpha1.FinalizerRGD until their graph is removed. It watches the hub
// cluster only, never a spoke, and never writes an RGD it does not claim.
type Reconciler struct {
	// Client reads and writes RGDs on the hub.
	Client client.Client
	// Registry serves the graphs.
	Registry Registry
	// Recorder emits events on RGDs. Optional.
	Recorder events.EventRecorder
	// Selector picks the RGDs this controller claims, by label. Defaults to
	// every RGD.
	Selector labels.Selector
	// Resync is how often the fleet status is refreshed. Defaults to
	// DefaultResync.
	Resync time.Duration
	// Changed, if set, tells of graphs whose fleet status changed, so
	// their status is written at once rather than at the next resync.
	// Names of graphs that do not belong to an RGD are ignored.
	Changed Changes
	// APIReader reads an RGD from the API server when the cached copy
	// proved stale (adding the finalizer conflicted). Defaults to Client.
	APIReader client.Reader
	// Workers is how many RGDs are reconciled at once. Defaults to the
	// manager's MaxConcurrentReconciles (manager.Options.Controller) if
	// set, else DefaultWorkers.
	Workers int
	// Cache is where the controller watches RGDs. Defaults to the
	// manager's cache, whose scheme must then know the RGD types; a hub
	// whose manager's scheme does not know them passes the cache of a
	// cluster with a scheme of its own (and Client, APIReader and Recorder
	// from that cluster too).
	Cache cache.Cache
}

// SetupWithManager adds the controller, named "fleetgraph-rgd", to the hub's
// (local) manager.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Resync == 0 {
		r.Resync = DefaultResync
	}
	if r.Selector == nil {
		r.Selector = labels.Everything()
	}
	if r.Workers == 0 {
		r.Workers = mgr.GetControllerOptions().MaxConcurrentReconciles
	}
	if r.Workers == 0 {
		r.Workers = DefaultWorkers
	}
	skip := true // several hubs in one process (tests), unless mgr says otherwise
	if s := mgr.GetControllerOptions().SkipNameValidation; s != nil {
		skip = *s
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("fleetgraph-rgd").
		WithOptions(controller.Options{SkipNameValidation: &skip, MaxConcurrentReconciles: r.Workers}).
		WithLogConstructor(rgdLogConstructor(mgr, "fleetgraph-rgd")) // rgd_log.go
	if r.Cache == nil {
		b = b.For(&v1alpha1.ResourceGraphDefinition{})
	} else {
		// Not For: the builder would look the kind up in mgr's scheme.
		b = b.WatchesRawSource(source.Kind(r.Cache, &v1alpha1.ResourceGraphDefinition{},
			&handler.TypedEnqueueRequestForObject[*v1alpha1.ResourceGraphDefinition]{}))
	}
	if r.Changed != nil {
		events := make(chan event.GenericEvent)
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			r.forward(ctx, events)
			return nil
		})); err != nil {
			return err
		}
		b = b.WatchesRawSource(source.Channel(events, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(forgetting{r})
}

// Changes are the names of graphs whose fleet status changed since they
// were last taken. Their producer must not block nor lose a name when the
// controller is slow: an implementation keeps each name once until it is
// taken, however often it changes meanwhile (which also bounds it by the
// number of graphs), and wakes the controller through a channel of one
// slot.
type Changes interface {
	// Ready receives once names wait to be taken (one signal for any
	// number of names).
	Ready() <-chan struct{}
	// Take returns the names waiting, and forgets them.
	Take() []string
}

// forward turns the names on Changed into the events a channel source
// wants, until ctx ends.
func (r *Reconciler) forward(ctx context.Context, out chan<- event.GenericEvent) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.Changed.Ready():
		}
		for _, name := range r.Changed.Take() {
			obj := &v1alpha1.ResourceGraphDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
			select {
			case out <- event.GenericEvent{Object: obj}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := r.Client.Get(ctx, req.NamespacedName, rgd); err != nil {
		if client.IgnoreNotFound(err) == nil {
			gone := &v1alpha1.ResourceGraphDefinition{ObjectMeta: metav1.ObjectMeta{Name: req.Name}}
			_, err := r.Registry.Remove(ctx, gone)
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, err
	}
	if rgd.DeletionTimestamp != nil || !r.Selector.Matches(labels.Set(rgd.Labels)) {
		return r.release(ctx, rgd)
	}
	if err := r.claim(ctx, rgd); err != nil {
		return reconcile.Result{}, err
	}
	g, err := r.Registry.Register(ctx, rgd)
	if errors.Is(err, ErrCompiling) {
		// Other RGDs go on meanwhile; Changed brings this one back.
		log.FromContext(ctx).V(1).Info("RGD still compiling")
		return reconcile.Result{RequeueAfter: r.Resync}, nil
	}
	if err != nil && !isCompileError(err) && !isRefusal(err) {
		return reconcile.Result{}, err
	}
	status := r.status(rgd, g, err)
	if err := r.writeStatus(ctx, rgd, status); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.Resync}, nil
}

// claim puts our finalizer on rgd, so that its deletion waits for cleanup.
// A conflict means the cached copy is behind the API server: a megabyte
// RGD's watch event can take tens of seconds to reach a loaded hub's
// cache, and every reconcile until then would conflict again (measured:
// 50 s of conflicts before a tenant's RGD could be refused). The RGD is
// then read from the API server once, and the finalizer added to that.
func (r *Reconciler) claim(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) error {
	if controllerutil.ContainsFinalizer(rgd, v1alpha1.FinalizerRGD) {
		return nil
	}
	err := r.addFinalizer(ctx, rgd)
	if !apierrors.IsConflict(err) {
		return err
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	live := &v1alpha1.ResourceGraphDefinition{}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(rgd), live); err != nil {
		return fmt.Errorf("reading RGD %s after a conflict: %w", rgd.Name, err)
	}
	*rgd = *live
	if controllerutil.ContainsFinalizer(rgd, v1alpha1.FinalizerRGD) {
		return nil
	}
	return r.addFinalizer(ctx, rgd)
}

// addFinalizer adds our finalizer to rgd as of its resourceVersion.
func (r *Reconciler) addFinalizer(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) error {
	before := finalizersOf(rgd)
	after := before.DeepCopy()
	controllerutil.AddFinalizer(after, v1alpha1.FinalizerRGD)
	if err := r.Client.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding finalizer to RGD %s: %w", rgd.Name, err)
	}
	*rgd = *after // the object as the API server returned it
	return nil
}

// finalizersOf is rgd's identity, version and finalizers alone: what a
// patch of its finalizers is computed from. A patch computed from the whole
// object would encode, decode and compare the whole spec twice, and a
// tenant's spec may be megabytes.
func finalizersOf(rgd *v1alpha1.ResourceGraphDefinition) *v1alpha1.ResourceGraphDefinition {
	return &v1alpha1.ResourceGraphDefinition{ObjectMeta: metav1.ObjectMeta{
		Name: rgd.Name, Namespace: rgd.Namespace, ResourceVersion: rgd.ResourceVersion, Finalizers: slices.Clone(rgd.Finalizers),
	}}
}

// release removes the graph of an RGD being deleted, or no longer claimed,
// and takes our finalizer off once the removal is done. An RGD without our
// finalizer is never written.
func (r *Reconciler) release(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(rgd, v1alpha1.FinalizerRGD) {
		return reconcile.Result{}, nil
	}
	done, err := r.Registry.Remove(ctx, rgd)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !done {
		return reconcile.Result{RequeueAfter: DefaultRemovalPoll}, nil
	}
	before := finalizersOf(rgd)
	after := before.DeepCopy()
	controllerutil.RemoveFinalizer(after, v1alpha1.FinalizerRGD)
	if err := r.Client.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("removing finalizer from RGD %s: %w", rgd.Name, err)
	}
	log.FromContext(ctx).Info("RGD released", "deleting", rgd.DeletionTimestamp != nil)
	return reconcile.Result{}, nil
}

// isCompileError tells a bad RGD (reported in status) from a failure to
// serve it (retried).
func isCompileError(err error) bool {
	if errors.Is(err, graph.ErrSchemaUnavailable) {
		return false // not the RGD's fault: retried with backoff
	}
	var ge *graph.Error
	return errors.As(err, &ge) || errors.Is(err, graph.ErrInvalid)
}

// status computes kro's RGD conditions: GraphAccepted (the spec compiled
// and nothing else holds its name or kind), KindReady (the CRD is
// established on every engaged cluster), ControllerReady (the runtime
// serves the graph) and Ready (all three). State is Active exactly when
// Ready is True. On a refused update the previous graph keeps serving, and
// KindReady and ControllerReady say so.
func (r *Reconciler) status(rgd *v1alpha1.ResourceGraphDefinition, g *graph.Graph, regErr error) v1alpha1.ResourceGraphDefinitionStatus {
	st := *rgd.Status.DeepCopy()
	st.ObservedGeneration = rgd.Generation
	gen := rgd.Generation
	if regErr != nil {
		r.rejected(rgd, &st, regErr)
		g = r.Registry.Serving(rgd.Name)
	} else {
		r.accepted(rgd, &st, g) // warnings.go
	}
	if g == nil {
		st.Fleet = nil
		setCondition(&st, v1alpha1.ConditionKindReady, metav1.ConditionFalse, "Failed", "no graph is served for this RGD", gen)
		setCondition(&st, v1alpha1.ConditionControllerReady, metav1.ConditionFalse, "FailedToStart", "no graph is served for this RGD", gen)
	} else {
		st.TopologicalOrder, st.Resources = order(g)
		st.LastIssuedRevision = max(st.LastIssuedRevision, r.Registry.Revision(rgd.Name))
		gs := r.Registry.Status(rgd.Name)
		fleet := Summary(gs)
		st.Fleet = fleet
		kind := g.Instance.GVK.Kind
		switch {
		case len(gs.AwaitingReplicas) > 0:
			setCondition(&st, v1alpha1.ConditionKindReady, metav1.ConditionFalse, "AwaitingReplicas",
				fmt.Sprintf("kind %s: the clusters of hub replicas %s are not known yet", kind, strings.Join(gs.AwaitingReplicas, ", ")), gen)
		case fleet.Unhealthy > 0:
			setCondition(&st, v1alpha1.ConditionKindReady, metav1.ConditionFalse, "Failed",
				withFleet(fmt.Sprintf("kind %s cannot be served on %d of %d clusters", kind, fleet.Unhealthy, fleet.Clusters), fleet), gen)
		default:
			setCondition(&st, v1alpha1.ConditionKindReady, metav1.ConditionTrue, "Ready",
				withFleet(fmt.Sprintf("kind %s has been accepted and ready on %d clusters", kind, fleet.Clusters), fleet), gen)
		}
		setCondition(&st, v1alpha1.ConditionControllerReady, metav1.ConditionTrue, "Running", "controller is running", gen)
	}
	setReady(&st, gen)
	return st
}

// withFleet adds to msg the fleet's one-line account when some cluster
// does not serve the latest revision, or one is unhealthy: which
// revisions serve and why ("serving revision 2 (revision 3 rolled back:
// ...)").
func withFleet(msg string, fleet *v1alpha1.FleetStatus) string {
	if fleet.Message == "" || fleet.NotLatest+fleet.Unhealthy == 0 {
		return msg
	}
	return msg + "; " + fleet.Message
}

// setReady sets Ready from its dependents as kro does: True when all are
// True, else the first False one's reason and message (or the first
// Unknown one's).
func setReady(st *v1alpha1.ResourceGraphDefinitionStatus, gen int64) {
	deps := []string{v1alpha1.ConditionGraphAccepted, v1alpha1.ConditionKindReady, v1alpha1.ConditionControllerReady}
	var worst *metav1.Condition
	for _, typ := range deps {
		c := meta.FindStatusCondition(st.Conditions, typ)
		switch {
		case c == nil:
			worst = &metav1.Condition{Status: metav1.ConditionUnknown, Reason: "AwaitingReconciliation", Message: typ + " is awaiting reconciliation"}
		case c.Status == metav1.ConditionFalse && (worst == nil || worst.Status != metav1.ConditionFalse):
			worst = c
		case c.Status == metav1.ConditionUnknown && worst == nil:
			worst = c
		}
	}
	if worst == nil {
		st.State = v1alpha1.StateActive
		setCondition(st, v1alpha1.ConditionReady, metav1.ConditionTrue, "Ready", "", gen)
		return
	}
	st.State = v1alpha1.StateInactive
	setCondition(st, v1alpha1.ConditionReady, worst.Status, worst.Reason, worst.Message, gen)
}

func (r *Reconciler) rejected(rgd *v1alpha1.ResourceGraphDefinition, st *v1alpha1.ResourceGraphDefinitionStatus, err error) {
	prev := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGraphAccepted)
	msg := fitCondition(err.Error())
	reason := "InvalidResourceGraph"
	switch {
	case errors.Is(err, ErrNameTaken):
		reason = "NameTaken"
	case errors.Is(err, ErrKindTaken):
		reason = "KindTaken"
	}
	if r.Recorder != nil && (prev == nil || prev.Status != metav1.ConditionFalse || prev.Message != msg) {
		r.Recorder.Eventf(rgd, nil, "Warning", "GraphRejected", reason, "%s", msg)
	}
	setCondition(st, v1alpha1.ConditionGraphAccepted, metav1.ConditionFalse, reason, msg, rgd.Generation)
}

func order(g *graph.Graph) ([]string, []v1alpha1.ResourceInformation) {
	ids := make([]string, 0, len(g.Nodes))
	infos := make([]v1alpha1.ResourceInformation, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
		info := v1alpha1.ResourceInformation{ID: n.ID}
		for _, d := range n.Dependencies {
			info.Dependencies = append(info.Dependencies, v1alpha1.Dependency{ID: d})
		}
		infos = append(infos, info)
	}
	return ids, infos
}

// maxConditionMessage is the longest message the API server accepts in a
// condition (metav1.Condition's message: at most 32768 characters). A
// status with a longer one is refused as a whole, so the RGD would show no
// condition at all.
const maxConditionMessage = 32768

// fitCondition cuts msg to what a condition holds: at a line's end when it
// can (a compile's errors are one a line), saying how much was left out.
func fitCondition(msg string) string {
	if len(msg) <= maxConditionMessage {
		return msg
	}
	cut := msg[:maxConditionMessage-64]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return fmt.Sprintf("%s\n… and %d more bytes of errors", cut, len(msg)-len(cut))
}

func setCondition(st *v1alpha1.ResourceGraphDefinitionStatus, typ string, status metav1.ConditionStatus, reason, msg string, gen int64) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
	})
}

// writeStatus patches the status subresource only when it changed. The
// patch is computed from the status alone, not from the whole object,
// whose spec may be megabytes.
func (r *Reconciler) writeStatus(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, st v1alpha1.ResourceGraphDefinitionStatus) error {
	if equality.Semantic.DeepEqual(rgd.Status, st) {
		return nil
	}
	before := &v1alpha1.ResourceGraphDefinition{ObjectMeta: metav1.ObjectMeta{Name: rgd.Name, Namespace: rgd.Namespace}, Status: rgd.Status}
	after := before.DeepCopy()
	after.Status = st
	if err := r.Client.Status().Patch(ctx, after, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing status of RGD %s: %w", rgd.Name, err)
	}
	log.FromContext(ctx).V(1).Info("RGD status written", "state", st.State)
	return nil
}
