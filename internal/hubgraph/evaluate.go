package hubgraph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"sync"
	"sync/atomic"

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
	// reason is the first failure's.
	reason  string
	waiting []string
	// writes bounds the writes in flight in this reconcile, whatever
	// nodes and iterations they come from, to maxNodesAtOnce.
	writes chan struct{}
	// down holds the clusters found unreachable in this reconcile: their
	// other resources wait without calling them again, and only what
	// depends on them waits too.
	down map[string]error
	// refs are the external references read (or looked for), for the
	// watches (externals.set).
	refs []extRef
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
	// refs watches what external references read (external_refs.go).
	refs *externals
}

// maxNodesAtOnce bounds how many nodes of one level one reconcile
// evaluates at once, how many iterations of one node, and how many writes
// the reconcile has in flight in all.
const maxNodesAtOnce = 8

// nodeResult is what one node got to. The nodes of a level run at once
// and only read the outcome; evaluate merges their results into it, in
// DAG order, once the level is done.
type nodeResult struct {
	state nodeState
	err   error
	// reason is the failure's (a condition reason).
	reason string
	// value is what expressions see of the node, when set is true.
	value any
	set   bool
	// desired are the children it wrote.
	desired []childID
	// down are the clusters found unreachable, with their errors.
	down map[string]error
	// refs are the external references it read.
	refs []extRef
}

// evaluate walks the graph level by level for inst: a node runs once its
// dependencies are ready, wherever they live. The nodes of one level do
// not read each other: they are evaluated and written at once (at most
// maxNodesAtOnce).
func (e *evaluator) evaluate(ctx context.Context, inst *unstructured.Unstructured, p *plan) *outcome {
	budget := graph.NewBudget(e.g.Limits().WithDefaults())
	o := &outcome{
		ctx:    graph.WithBudget(ctx, budget),
		vals:   maps.Clone(p.vals),
		states: map[string]nodeState{}, desired: map[childID]bool{}, down: map[string]error{},
		writes: make(chan struct{}, maxNodesAtOnce),
	}
	for _, level := range e.g.Levels {
		results := e.level(o, inst, p, level)
		for i, n := range level {
			o.merge(n, &results[i])
		}
	}
	return o
}

// level runs one level's nodes, at most maxNodesAtOnce at a time.
func (e *evaluator) level(o *outcome, inst *unstructured.Unstructured, p *plan, level []*graph.Node) []nodeResult {
	results := make([]nodeResult, len(level))
	atOnce(len(level), func(i int) { results[i] = e.guarded(o, inst, p, level[i]) })
	return results
}

// atOnce calls f(0) to f(n-1) on at most maxNodesAtOnce goroutines and
// returns when every call has; a single call runs on the caller's.
func atOnce(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, maxNodesAtOnce) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}

// guarded is node on a goroutine of its own: a panic there would end the
// process (the controller recovers only its own goroutine's), so it
// fails the node instead, for this instance only.
func (e *evaluator) guarded(o *outcome, inst *unstructured.Unstructured, p *plan, n *graph.Node) (r nodeResult) {
	defer func() {
		if v := recover(); v != nil {
			r = result(nodeFailed, fmt.Errorf("resource %q: %w: %v", n.ID, errPanic, v))
			r.reason = reasonEvaluationFailed
		}
	}()
	return e.node(o, inst, p, n)
}

// errPanic is wrapped by the error of a node whose evaluation panicked.
var errPanic = errors.New("evaluation panicked")

// merge records one node's result in the outcome.
func (o *outcome) merge(n *graph.Node, r *nodeResult) {
	o.states[n.ID] = r.state
	if r.set {
		o.vals[n.ID] = r.value
	}
	for _, id := range r.desired {
		o.desired[id] = true
	}
	o.refs = append(o.refs, r.refs...)
	for name, err := range r.down {
		if o.down[name] == nil {
			o.down[name] = err
		}
	}
	switch {
	case r.state == nodeFailed && o.failed == nil:
		o.failed, o.reason = r.err, r.reason
	case r.state == nodeWaiting || r.state == nodeNotReady:
		o.waiting = append(o.waiting, waitMessage(n, r.state, r.err))
	}
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

func result(st nodeState, err error) nodeResult { return nodeResult{state: st, err: err} }

// unreachableAt is the result of a node that found cluster name
// unreachable.
func unreachableAt(name string, err error) nodeResult {
	return nodeResult{state: nodeWaiting, err: unreachableError(name, err), down: map[string]error{name: err}}
}

// node evaluates and writes one node. It only reads o.
func (e *evaluator) node(o *outcome, inst *unstructured.Unstructured, p *plan, n *graph.Node) nodeResult {
	for _, dep := range n.Dependencies {
		switch o.states[dep] {
		case nodeReady:
		case nodeExcluded:
			return result(nodeExcluded, nil)
		default:
			return result(nodeWaiting, nil)
		}
	}
	if ok, err := n.Included(o.ctx, o.vals); err != nil {
		return evalFailure(err)
	} else if !ok {
		return result(nodeExcluded, nil)
	}
	if n.External {
		name := p.clusterOf[n.ID]
		if err := o.down[name]; err != nil {
			return result(nodeWaiting, unreachableError(name, err))
		}
		return e.external(o, inst, n, name, p.clusters[name])
	}
	iterations, err := n.Iterations(o.ctx, o.vals)
	if err != nil {
		return evalFailure(err)
	}
	items := make([]item, len(iterations))
	atOnce(len(iterations), func(i int) { items[i] = e.guardedItem(o, inst, p, n, i, iterations[i]) })
	r, observed, problem := gather(items)
	if problem != nil {
		return *problem
	}
	if n.Collection {
		r.value, r.set = observed, true
	} else if len(observed) == 1 {
		r.value, r.set = observed[0], true
	}
	rr := e.readiness(o, n, observed)
	rr.value, rr.set, rr.desired = r.value, r.set, r.desired
	return rr
}

// write applies one child, holding one of the reconcile's write slots.
func (e *evaluator) write(o *outcome, inst *unstructured.Unstructured, n *graph.Node, name string, cl cluster.Cluster, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	o.writes <- struct{}{}
	defer func() { <-o.writes }()
	return e.apply.apply(o.ctx, inst, n, name, cl, desired)
}

// gather puts a node's iterations together, in order: the children
// written and their answers, or the first problem, which carries every
// cluster any iteration found unreachable.
func gather(items []item) (r nodeResult, observed []any, problem *nodeResult) {
	observed = make([]any, 0, len(items))
	for _, it := range items {
		if it.problem == nil {
			r.desired = append(r.desired, it.child)
			observed = append(observed, it.got.Object)
			continue
		}
		for name, err := range it.problem.down {
			if r.down == nil {
				r.down = map[string]error{}
			}
			r.down[name] = err
		}
		if problem == nil {
			problem = it.problem
		}
	}
	if problem != nil {
		problem.down = r.down
	}
	return r, observed, problem
}

// item is one iteration of a node written, or the problem that stopped it.
type item struct {
	got     *unstructured.Unstructured
	child   childID
	problem *nodeResult
}

// guardedItem renders and writes one iteration of n: the iterations of a
// node, each in its own cluster, are written at once (see guarded for
// the panic).
func (e *evaluator) guardedItem(o *outcome, inst *unstructured.Unstructured, p *plan, n *graph.Node, i int, it map[string]any) (out item) {
	defer func() {
		if v := recover(); v != nil {
			r := result(nodeFailed, fmt.Errorf("resource %q: %w: %v", n.ID, errPanic, v))
			r.reason = reasonEvaluationFailed
			out = item{problem: &r}
		}
	}()
	stop := func(r nodeResult) item { return item{problem: &r} }
	name, err := p.clusterFor(n.ID, i)
	if err != nil {
		return stop(evalFailure(err))
	}
	if err := o.down[name]; err != nil {
		return stop(result(nodeWaiting, unreachableError(name, err)))
	}
	desired, err := n.Render(o.ctx, o.vals, it)
	if err != nil {
		return stop(evalFailure(err))
	}
	got, err := e.write(o, inst, n, name, p.clusters[name], desired)
	if err != nil {
		return stop(applyFailure(n, name, err))
	}
	return item{got: got, child: childID{cluster: name, gvk: n.GVK, namespace: got.GetNamespace(), name: got.GetName()}}
}

// applyFailure is the result of a node whose write into cluster name
// failed.
func applyFailure(n *graph.Node, name string, err error) nodeResult {
	var del *deletingError
	switch {
	case errors.As(err, &del):
		return result(nodeWaiting, err)
	case unreachable(err):
		return unreachableAt(name, err)
	}
	r := result(nodeFailed, fmt.Errorf("resource %q in %s: %w", n.ID, displayName(name), err))
	r.reason = reasonApplyFailed
	if errors.Is(err, ErrOutsideNamespace) {
		r.reason = reasonOutsideNamespace
	}
	return r
}

// readiness evaluates readyWhen on every observed object (which
// graph.Node.Ready shows under the node's own id).
func (e *evaluator) readiness(o *outcome, n *graph.Node, observed []any) nodeResult {
	for _, obj := range observed {
		m, _ := obj.(map[string]any)
		ok, err := n.Ready(o.ctx, o.vals, m)
		if errors.Is(err, graph.ErrPending) {
			return result(nodeNotReady, nil)
		}
		if err != nil {
			return evalFailure(err)
		}
		if !ok {
			return result(nodeNotReady, nil)
		}
	}
	return result(nodeReady, nil)
}

// evalFailure is a node's evaluation error: a wait for data pending, a
// failure otherwise.
func evalFailure(err error) nodeResult {
	if errors.Is(err, graph.ErrPending) {
		return result(nodeWaiting, err)
	}
	r := result(nodeFailed, err)
	r.reason = evalReason(err)
	return r
}

// external reads an externalRef in its cluster, live, and watches what
// it read (external_watch.go): a change there requeues the instance.
func (e *evaluator) external(o *outcome, inst *unstructured.Unstructured, n *graph.Node, name string, cl cluster.Cluster) nodeResult {
	ref, err := n.Ref(o.ctx, o.vals)
	if err != nil {
		return evalFailure(err)
	}
	ns := ref.Namespace
	namespaced, err := namespaced(cl, ref.GVK)
	if err != nil {
		return result(nodeWaiting, fmt.Errorf("in %s: %w", displayName(name), err))
	}
	if namespaced && ns == "" {
		ns = defaultNamespace(inst)
	}
	if err := e.apply.confined(inst, ref.GVK, ns, ref.Name, namespaced); err != nil {
		r := result(nodeFailed, fmt.Errorf("resource %q in %s: %w", n.ID, displayName(name), err))
		r.reason = reasonOutsideNamespace
		return r
	}
	read := extRef{cluster: name, gvk: ref.GVK, namespace: ns, name: ref.Name}
	if ref.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return evalFailure(err)
		}
		read.name, read.selector = "", sel
	}
	cctx, cancel := e.rt.callCtx(o.ctx)
	defer cancel()
	var r nodeResult
	if read.selector != nil {
		r = e.externalList(cctx, o, n, name, cl, &read)
	} else {
		r = e.externalGet(cctx, o, n, name, cl, &read)
	}
	if _, down := r.down[name]; down {
		return r // not watched: its next evaluation, when it answers, is
	}
	key := keyOf(inst.GetNamespace(), inst.GetName())
	e.refs.note(key, read)
	r.refs = []extRef{read}
	if err := e.refs.ensure(cctx, name, cl, ref.GVK); err != nil && r.state == nodeReady {
		return result(nodeWaiting, fmt.Errorf("externalRef %s: %w", ref.GVK.Kind, err))
	}
	return r
}

// externalGet reads an externalRef by name, and notes in read what it saw.
func (e *evaluator) externalGet(ctx context.Context, o *outcome, n *graph.Node, name string, cl cluster.Cluster, read *extRef) nodeResult {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(read.gvk)
	if err := cl.GetAPIReader().Get(ctx, keyOf(read.namespace, read.name), u); err != nil {
		if unreachable(err) {
			return unreachableAt(name, err)
		}
		if !apierrors.IsNotFound(err) {
			read.partial = true
		}
		return result(nodeWaiting, fmt.Errorf("externalRef %s %s in %s: %w", read.gvk.Kind, read.name, displayName(name), err))
	}
	read.sawObject(keyOf(u.GetNamespace(), u.GetName()), u.GetResourceVersion())
	r := e.readiness(o, n, []any{u.Object})
	r.value, r.set = u.Object, true
	return r
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

// externalList reads an externalRef by label selector, and notes in read
// what it saw.
func (e *evaluator) externalList(ctx context.Context, o *outcome, n *graph.Node, name string, cl cluster.Cluster, read *extRef) nodeResult {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(read.gvk.GroupVersion().WithKind(read.gvk.Kind + "List"))
	if err := cl.GetAPIReader().List(ctx, list, client.InNamespace(read.namespace), client.MatchingLabelsSelector{Selector: read.selector}); err != nil {
		if unreachable(err) {
			return unreachableAt(name, err)
		}
		read.partial = true
		return result(nodeWaiting, fmt.Errorf("externalRef %s in %s: %w", read.gvk.Kind, displayName(name), err))
	}
	items := make([]any, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, list.Items[i].Object)
		read.sawObject(keyOf(list.Items[i].GetNamespace(), list.Items[i].GetName()), list.Items[i].GetResourceVersion())
	}
	r := e.readiness(o, n, items)
	r.value, r.set = items, true
	return r
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
