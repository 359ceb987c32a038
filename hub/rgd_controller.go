package hub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// DefaultResync is how often the RGD controller refreshes an RGD's fleet
// status (instance counts change without any event on the hub).
const DefaultResync = 10 * time.Second

// Registry is what the RGD controller drives; sdk.Hub implements it.
type Registry interface {
	// Register compiles rgd and serves it on every engaged cluster. It is a
	// no-op when the same spec is already served. A compile error leaves
	// what was served before in place.
	Register(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (*graph.Graph, error)
	// Unregister stops serving the named graph.
	Unregister(ctx context.Context, name string) error
	// Status is the graph's state across the fleet.
	Status(name string) GraphStatus
}

// RGDReconciler turns ResourceGraphDefinition objects on the hub into
// registered graphs and writes back their status: GraphAccepted (with the
// compiler's message), Ready, the topological order and the fleet summary.
// It watches the hub cluster only, never a spoke.
type RGDReconciler struct {
	// Client reads and writes RGDs on the hub.
	Client client.Client
	// Registry serves the graphs.
	Registry Registry
	// Recorder emits events on RGDs. Optional.
	Recorder events.EventRecorder
	// Resync is how often the fleet status is refreshed. Defaults to
	// DefaultResync.
	Resync time.Duration
	// Changed, if set, carries the names of graphs whose fleet status
	// changed, so their status is written at once rather than at the next
	// resync. Names of graphs that do not belong to an RGD are ignored.
	Changed <-chan string
}

// SetupWithManager adds the controller, named "fleetgraph-rgd", to the hub's
// (local) manager.
func (r *RGDReconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Resync == 0 {
		r.Resync = DefaultResync
	}
	skip := true
	b := ctrl.NewControllerManagedBy(mgr).
		Named("fleetgraph-rgd").
		WithOptions(controller.Options{SkipNameValidation: &skip}).
		For(&v1alpha1.ResourceGraphDefinition{})
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
	return b.Complete(r)
}

// forward turns the names on Changed into the events a channel source
// wants, until ctx ends.
func (r *RGDReconciler) forward(ctx context.Context, out chan<- event.GenericEvent) {
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-r.Changed:
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
func (r *RGDReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := r.Client.Get(ctx, req.NamespacedName, rgd); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return reconcile.Result{}, r.Registry.Unregister(ctx, req.Name)
		}
		return reconcile.Result{}, err
	}
	if rgd.DeletionTimestamp != nil {
		return reconcile.Result{}, r.Registry.Unregister(ctx, rgd.Name)
	}
	g, compileErr := r.Registry.Register(ctx, rgd)
	if compileErr != nil && !isCompileError(compileErr) {
		return reconcile.Result{}, compileErr
	}
	status := r.status(rgd, g, compileErr)
	if err := r.writeStatus(ctx, rgd, status); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.Resync}, nil
}

// isCompileError tells a bad RGD (reported in status) from a failure to
// serve it (retried).
func isCompileError(err error) bool {
	var ge *graph.Error
	return errors.As(err, &ge) || errors.Is(err, graph.ErrInvalid)
}

func (r *RGDReconciler) status(rgd *v1alpha1.ResourceGraphDefinition, g *graph.Graph, compileErr error) v1alpha1.ResourceGraphDefinitionStatus {
	st := *rgd.Status.DeepCopy()
	st.ObservedGeneration = rgd.Generation
	if compileErr != nil {
		r.rejected(rgd, &st, compileErr)
		return st
	}
	st.State = v1alpha1.StateActive
	st.TopologicalOrder, st.Resources = order(g)
	st.LastIssuedRevision = max(st.LastIssuedRevision, g.Revision)
	setCondition(&st, v1alpha1.ConditionGraphAccepted, true, "Compiled", "graph compiled", rgd.Generation)
	fleet := r.Registry.Status(rgd.Name).Summary()
	st.Fleet = fleet
	if fleet.Unhealthy > 0 {
		setCondition(&st, v1alpha1.ConditionReady, false, "ClustersUnhealthy",
			fmt.Sprintf("%d of %d clusters cannot serve the graph", fleet.Unhealthy, fleet.Clusters), rgd.Generation)
	} else {
		setCondition(&st, v1alpha1.ConditionReady, true, "Served",
			fmt.Sprintf("served on %d clusters", fleet.Clusters), rgd.Generation)
	}
	return st
}

func (r *RGDReconciler) rejected(rgd *v1alpha1.ResourceGraphDefinition, st *v1alpha1.ResourceGraphDefinitionStatus, err error) {
	prev := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGraphAccepted)
	msg := err.Error()
	if r.Recorder != nil && (prev == nil || prev.Status != metav1.ConditionFalse || prev.Message != msg) {
		r.Recorder.Eventf(rgd, nil, "Warning", "GraphRejected", "Compile", "%s", msg)
	}
	st.State = v1alpha1.StateInactive
	setCondition(st, v1alpha1.ConditionGraphAccepted, false, "InvalidGraph", msg, rgd.Generation)
	setCondition(st, v1alpha1.ConditionReady, false, "InvalidGraph", "the graph does not compile", rgd.Generation)
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

func setCondition(st *v1alpha1.ResourceGraphDefinitionStatus, typ string, ok bool, reason, msg string, gen int64) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
	})
}

// writeStatus patches the status subresource only when it changed.
func (r *RGDReconciler) writeStatus(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, st v1alpha1.ResourceGraphDefinitionStatus) error {
	if equality.Semantic.DeepEqual(rgd.Status, st) {
		return nil
	}
	patch := client.MergeFrom(rgd.DeepCopy())
	rgd.Status = st
	if err := r.Client.Status().Patch(ctx, rgd, patch); err != nil {
		return fmt.Errorf("writing status of RGD %s: %w", rgd.Name, err)
	}
	log.FromContext(ctx).V(1).Info("RGD status written", "state", st.State)
	return nil
}
