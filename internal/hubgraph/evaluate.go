package hubgraph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// nodeState is where one node got to in one reconcile.
type nodeState int

const (
	nodeReady    nodeState = iota // written (or read) and ready
	nodeNotReady                  // written, readyWhen not true yet
	nodeExcluded                  // includeWhen false, or a dependency excluded
	nodeWaiting                   // a dependency not ready, data pending, a child being deleted
	nodeFailed                    // evaluation, ownership or write error
)

// childID is one child written (or to be kept) in one cluster.
type childID struct {
	cluster   string
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

// outcome is what one reconcile of one instance got to.
type outcome struct {
	ctx    context.Context // carries the reconcile's evaluation budget
	vals   graph.Values
	states map[string]nodeState
	// desired are the children written this time, by cluster.
	desired map[childID]bool
	// failed is the first failure in DAG order; waiting are the messages
	// of the nodes not ready.
	failed error
	// reason is the first failure's; lastReason the last node's.
	reason, lastReason string
	waiting            []string
	// down holds the clusters found unreachable in this reconcile: their
	// other resources wait without calling them again, and only what
	// depends on them waits too.
	down map[string]error
}

// Reasons in conditions.
const (
	reasonEvaluationFailed = "EvaluationFailed"
	reasonApplyFailed      = "ApplyFailed"
	reasonTargetRefused    = "TargetRefused"
	reasonClusterWaiting   = "ClusterUnreachable"
)

// evaluator walks one instance's graph across clusters, writing each
// node through its applier once the node's dependencies are ready. Each
// walk's state is its outcome, owned by the one reconcile doing it; the
// evaluator itself is not written to after it is made and needs no lock.
type evaluator struct {
	rt    *Runtime
	g     *graph.Graph
	apply *applier
}

// evaluate walks the graph level by level for inst: a node runs once its
// dependencies are ready, wherever they live.
func (e *evaluator) evaluate(ctx context.Context, inst *unstructured.Unstructured, p *plan) *outcome {
	budget := graph.NewBudget(e.g.Limits().WithDefaults())
	o := &outcome{
		ctx:    graph.WithBudget(ctx, budget),
		vals:   maps.Clone(p.vals),
		states: map[string]nodeState{}, desired: map[childID]bool{}, down: map[string]error{},
	}
	for _, level := range e.g.Levels {
		for _, n := range level {
			st, err := e.node(o, inst, p, n)
			o.states[n.ID] = st
			switch {
			case st == nodeFailed && o.failed == nil:
				o.failed, o.reason = err, o.lastReason
			case st == nodeWaiting || st == nodeNotReady:
				o.waiting = append(o.waiting, waitMessage(n, st, err))
			}
		}
	}
	return o
}

func waitMessage(n *graph.Node, st nodeState, err error) string {
	if err != nil {
		return fmt.Sprintf("resource %q: %v", n.ID, err)
	}
	if st == nodeNotReady {
		return fmt.Sprintf("resource %q is not ready", n.ID)
	}
	return fmt.Sprintf("resource %q waits for its dependencies", n.ID)
}

// node evaluates and writes one node.
func (e *evaluator) node(o *outcome, inst *unstructured.Unstructured, p *plan, n *graph.Node) (nodeState, error) {
	for _, dep := range n.Dependencies {
		switch o.states[dep] {
		case nodeReady:
		case nodeExcluded:
			return nodeExcluded, nil
		default:
			return nodeWaiting, nil
		}
	}
	if ok, err := n.Included(o.ctx, o.vals); err != nil {
		return e.evalFailure(o, err)
	} else if !ok {
		return nodeExcluded, nil
	}
	if n.External {
		name := p.clusterOf[n.ID]
		if err := o.down[name]; err != nil {
			return nodeWaiting, unreachableError(name, err)
		}
		return e.external(o, inst, n, name, p.clusters[name])
	}
	iterations, err := n.Iterations(o.ctx, o.vals)
	if err != nil {
		return e.evalFailure(o, err)
	}
	var observed []any
	for i, it := range iterations {
		name, err := p.clusterFor(n.ID, i)
		if err != nil {
			return e.evalFailure(o, err)
		}
		if err := o.down[name]; err != nil {
			return nodeWaiting, unreachableError(name, err)
		}
		desired, err := n.Render(o.ctx, o.vals, it)
		if err != nil {
			return e.evalFailure(o, err)
		}
		got, err := e.apply.apply(o.ctx, inst, n, name, p.clusters[name], desired)
		if err != nil {
			var del *deletingError
			if errors.As(err, &del) {
				return nodeWaiting, err
			}
			if unreachable(err) {
				o.down[name] = err
				return nodeWaiting, unreachableError(name, err)
			}
			o.lastReason = reasonApplyFailed
			if errors.Is(err, ErrOutsideNamespace) {
				o.lastReason = reasonOutsideNamespace
			}
			return nodeFailed, fmt.Errorf("resource %q in %s: %w", n.ID, displayName(name), err)
		}
		o.desired[childID{cluster: name, gvk: n.GVK, namespace: got.GetNamespace(), name: got.GetName()}] = true
		observed = append(observed, got.Object)
	}
	if n.Collection {
		o.vals[n.ID] = observed
	} else if len(observed) == 1 {
		o.vals[n.ID] = observed[0]
	}
	return e.readiness(o, n, observed)
}

// readiness evaluates readyWhen on every observed object.
func (e *evaluator) readiness(o *outcome, n *graph.Node, observed []any) (nodeState, error) {
	for _, obj := range observed {
		m, _ := obj.(map[string]any)
		ok, err := n.Ready(o.ctx, o.vals, m)
		if errors.Is(err, graph.ErrPending) {
			return nodeNotReady, nil
		}
		if err != nil {
			return e.evalFailure(o, err)
		}
		if !ok {
			return nodeNotReady, nil
		}
	}
	return nodeReady, nil
}

// evalFailure is a node's evaluation error: a wait for data pending, a
// failure otherwise.
func (e *evaluator) evalFailure(o *outcome, err error) (nodeState, error) {
	if errors.Is(err, graph.ErrPending) {
		return nodeWaiting, err
	}
	o.lastReason = evalReason(err)
	return nodeFailed, err
}

// external reads an externalRef in its cluster.
func (e *evaluator) external(o *outcome, inst *unstructured.Unstructured, n *graph.Node, name string, cl cluster.Cluster) (nodeState, error) {
	ref, err := n.Ref(o.ctx, o.vals)
	if err != nil {
		return e.evalFailure(o, err)
	}
	ns := ref.Namespace
	namespaced, err := namespaced(cl, ref.GVK)
	if err != nil {
		return nodeWaiting, fmt.Errorf("in %s: %w", displayName(name), err)
	}
	if namespaced && ns == "" {
		ns = defaultNamespace(inst)
	}
	if err := e.apply.confined(inst, ref.GVK, ns, ref.Name, namespaced); err != nil {
		o.lastReason = reasonOutsideNamespace
		return nodeFailed, fmt.Errorf("resource %q in %s: %w", n.ID, displayName(name), err)
	}
	cctx, cancel := e.rt.callCtx(o.ctx)
	defer cancel()
	if ref.Selector != nil {
		return e.externalList(cctx, o, n, name, cl, ref, ns)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GVK)
	if err := cl.GetAPIReader().Get(cctx, keyOf(ns, ref.Name), u); err != nil {
		if unreachable(err) {
			o.down[name] = err
			return nodeWaiting, unreachableError(name, err)
		}
		return nodeWaiting, fmt.Errorf("externalRef %s %s in %s: %w", ref.GVK.Kind, ref.Name, displayName(name), err)
	}
	o.vals[n.ID] = u.Object
	return e.readiness(o, n, []any{u.Object})
}

// namespaced reports whether gvk is namespaced in the cluster.
func namespaced(cl cluster.Cluster, gvk schema.GroupVersionKind) (bool, error) {
	m, err := cl.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func defaultNamespace(inst *unstructured.Unstructured) string {
	if ns := inst.GetNamespace(); ns != "" {
		return ns
	}
	return "default"
}

// externalList reads an externalRef by label selector.
func (e *evaluator) externalList(ctx context.Context, o *outcome, n *graph.Node, name string, cl cluster.Cluster, ref graph.ExternalRef, ns string) (nodeState, error) {
	sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
	if err != nil {
		return e.evalFailure(o, err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ref.GVK.GroupVersion().WithKind(ref.GVK.Kind + "List"))
	if err := cl.GetAPIReader().List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nodeWaiting, fmt.Errorf("externalRef %s in %s: %w", ref.GVK.Kind, displayName(name), err)
	}
	items := make([]any, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, list.Items[i].Object)
	}
	o.vals[n.ID] = items
	return e.readiness(o, n, items)
}

// unreachable reports whether err says that the cluster did not answer
// (rather than refused the request).
func unreachable(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err)
}

func unreachableError(name string, err error) error {
	return fmt.Errorf("cluster %q is unreachable: %w", name, err)
}
