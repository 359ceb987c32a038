package instance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// Placement says where the children of one instance live: for a node, and
// an item of a forEach (0 for a node without one and for an externalRef),
// the Cluster. The spoke driver places everything in the instance's own
// cluster (HomePlacement); hub graphs resolve each node's target first.
// Place is called from the goroutines of one reconcile at once.
type Placement interface {
	Place(n *graph.Node, item int) (*Cluster, error)
}

// HomePlacement places every child in the engine's home cluster.
func (e *Engine) HomePlacement() Placement { return homePlacement{e.home} }

type homePlacement struct{ c *Cluster }

func (h homePlacement) Place(*graph.Node, int) (*Cluster, error) { return h.c, nil }

// nodeState is where one node got to in one reconcile.
type nodeState int

const (
	nodeReady       nodeState = iota // applied (or read) and ready
	nodeNotReady                     // applied, readyWhen not yet true
	nodeExcluded                     // includeWhen false, or a dependency excluded
	nodePending                      // waits for data (ErrPending, missing external)
	nodeDeleting                     // a child is being deleted; waits until it is gone
	nodeBlocked                      // a dependency is not ready yet
	nodeUnreachable                  // a cluster it lives in does not answer
	nodeFailed                       // evaluation or apply error
)

// Failure reasons, used in conditions.
const (
	ReasonEvaluationFailed = "EvaluationFailed"
	ReasonApplyFailed      = "ApplyFailed"
	// ReasonLimitExceeded is an evaluation stopped by one of the graph's
	// Limits (graph.ErrLimit): the message names the resource, the
	// expression (truncated) and the limit.
	ReasonLimitExceeded = "LimitExceeded"
)

// nodeResult is the outcome of one node.
type nodeResult struct {
	state    nodeState
	observed any // map[string]any, or []any for collections and selectors
	entries  []Entry
	refs     []resolvedRef
	reason   string // for nodeFailed
	message  string // names the node; set for every state but nodeReady
	err      error
}

// Outcome is the result of evaluating the whole graph for one instance:
// what each node got to, the children applied, the references read. A
// driver hands it back to Prune and WriteStatus.
type Outcome struct {
	// ctx carries the reconcile's evaluation budget (graph.WithBudget):
	// every evaluation of this reconcile, status projections included,
	// charges it.
	ctx      context.Context
	budget   *graph.Budget
	key      types.NamespacedName
	vals     graph.Values
	nodes    map[string]*nodeResult
	applied  []Entry
	refs     []resolvedRef
	failed   *nodeResult // first failure in DAG order
	waiting  []string    // messages of nodes not ready, pending, deleting, blocked or unreachable
	deleting []string    // messages of nodes waiting for a child being deleted
	// full asks every child to be applied, even one the memory says is
	// unchanged: a periodic resync.
	full  bool
	where Placement
	// down are the clusters found unreachable in this reconcile.
	down *downClusters
}

// Failure returns the first failure's reason and message, in DAG order.
func (o *Outcome) Failure() (reason, message string, failed bool) {
	if o.failed == nil {
		return "", "", false
	}
	return o.failed.reason, o.failed.message, true
}

// Limited reports whether one of the graph's Limits stopped the reconcile.
func (o *Outcome) Limited() bool {
	return o.failed != nil && o.failed.reason == ReasonLimitExceeded
}

// Deleting reports whether a child the reconcile would write is being
// deleted: the instance waits for it to go (its delete event, or a poll).
func (o *Outcome) Deleting() bool { return len(o.deleting) > 0 }

// Unreachable reports whether a cluster the instance's children live in
// did not answer: no event will say when it does, so the driver retries.
func (o *Outcome) Unreachable() bool { return o.down.any() }

// Waiting reports whether a node waits (not ready, data pending, a child
// being deleted, a cluster that does not answer).
func (o *Outcome) Waiting() bool { return len(o.waiting) > 0 }

// evaluator walks an engine's graph for one instance: it evaluates each
// node's expressions, has the applier write its children where the
// placement says (or reads its external reference, external.go) and
// gathers what each node got to in an Outcome.
type evaluator struct{ e *Engine }

// Evaluate walks the graph for inst level by level, applying the nodes of
// one level in parallel: a node runs only when every dependency is ready.
// vals holds what the expressions read besides the resources (schema,
// and the driver's cluster or fleet variables); it is copied. where
// places every child. full bypasses the memory of unchanged applies (a
// periodic resync, ResyncDue). The references read are recorded for the
// instance, and watched (external_refs.go).
//
// Each level is expanded before anything of it is applied (plan): when its
// nodes' children together pass Limits.MaxChildren, none of them is
// applied, so an instance that asks for too many children across its
// resources writes none of that level rather than the first thousands.
func (e *Engine) Evaluate(inst *unstructured.Unstructured, vals graph.Values, where Placement, full bool) *Outcome {
	limits := e.g.Limits().WithDefaults()
	budget := graph.NewBudget(limits)
	out := &Outcome{
		ctx: graph.WithBudget(e.ctx, budget), budget: budget, key: keyOf(inst),
		vals: maps.Clone(vals), nodes: map[string]*nodeResult{}, full: full, where: where, down: &downClusters{},
	}
	if out.vals == nil {
		out.vals = graph.Values{}
	}
	if _, ok := out.vals["schema"]; !ok {
		out.vals["schema"] = inst.Object
	}
	ev := evaluator{e}
	for _, level := range e.g.Levels {
		results := make([]*nodeResult, len(level))
		iterations := make([][]map[string]any, len(level))
		eachNode(level, func(i int, n *graph.Node) { iterations[i], results[i] = ev.planSafely(inst, n, out) })
		if children := budget.Children(); children > int64(limits.MaxChildren) {
			for i, n := range level {
				if results[i] == nil {
					results[i] = tooManyChildren(n, children, limits.MaxChildren)
				}
			}
		}
		eachNode(level, func(i int, n *graph.Node) {
			if results[i] == nil {
				results[i] = ev.childrenSafely(inst, n, out, iterations[i])
			}
		})
		for i, n := range level {
			out.record(n, results[i])
		}
	}
	e.refs.set(out.key, out.refs)
	return out
}

// eachNode calls f for every node of a level, in parallel when there are
// several.
func eachNode(level []*graph.Node, f func(int, *graph.Node)) {
	if len(level) == 1 {
		f(0, level[0])
		return
	}
	var wg sync.WaitGroup
	for i, n := range level {
		wg.Go(func() { f(i, n) })
	}
	wg.Wait()
}

func (o *Outcome) record(n *graph.Node, r *nodeResult) {
	o.nodes[n.ID] = r
	o.applied = append(o.applied, r.entries...)
	o.refs = append(o.refs, r.refs...)
	if r.observed != nil {
		o.vals[n.ID] = r.observed
	}
	switch r.state {
	case nodeFailed:
		if o.failed == nil {
			o.failed = r
		}
	case nodeNotReady, nodePending, nodeBlocked, nodeUnreachable:
		o.waiting = append(o.waiting, r.message)
	case nodeDeleting:
		o.waiting = append(o.waiting, r.message)
		o.deleting = append(o.deleting, r.message)
	}
}

// resolved reports whether the node's desired children are fully known, so
// that its old children may be pruned.
func (o *Outcome) resolved(id string) bool {
	r, ok := o.nodes[id]
	if !ok {
		return true // no longer in the graph
	}
	return r.state == nodeReady || r.state == nodeNotReady || r.state == nodeExcluded
}

// planSafely is plan, with a panic turned into the node's failure.
func (ev evaluator) planSafely(inst *unstructured.Unstructured, n *graph.Node, o *Outcome) (its []map[string]any, r *nodeResult) {
	defer func() {
		if p := recover(); p != nil {
			its, r = nil, failed(n, ReasonEvaluationFailed, panicError("node "+n.ID, p))
		}
	}()
	return ev.plan(inst, n, o)
}

// plan decides whether a node runs and expands its iterations, counting
// its children (Node.Iterations): a result means the node is done (held
// back, excluded, failed, or an external reference read); none means its
// iterations are to be applied.
func (ev evaluator) plan(inst *unstructured.Unstructured, n *graph.Node, o *Outcome) ([]map[string]any, *nodeResult) {
	if r := gate(n, o.nodes); r != nil {
		return nil, r
	}
	included, err := n.Included(o.ctx, o.vals)
	if err != nil {
		return nil, evalError(n, "includeWhen", err)
	}
	if !included {
		return nil, &nodeResult{state: nodeExcluded, message: fmt.Sprintf("%s: excluded by includeWhen", n.ID)}
	}
	if n.External {
		return nil, ev.external(o, inst, n)
	}
	iterations, err := n.Iterations(o.ctx, o.vals)
	if err != nil {
		return nil, evalError(n, "forEach", err)
	}
	return iterations, nil
}

// childrenSafely is evalChildren, with a panic turned into the node's failure.
func (ev evaluator) childrenSafely(inst *unstructured.Unstructured, n *graph.Node, o *Outcome, iterations []map[string]any) (r *nodeResult) {
	defer func() {
		if p := recover(); p != nil {
			r = failed(n, ReasonEvaluationFailed, panicError("node "+n.ID, p))
		}
	}()
	return ev.evalChildren(o, inst, n, iterations)
}

// gate holds a node back while a dependency is excluded or not ready.
func gate(n *graph.Node, done map[string]*nodeResult) *nodeResult {
	var waiting []string
	for _, dep := range n.Dependencies {
		r, ok := done[dep]
		if !ok {
			continue
		}
		switch r.state {
		case nodeReady:
		case nodeExcluded:
			return &nodeResult{state: nodeExcluded, message: fmt.Sprintf("%s: excluded because %s is excluded", n.ID, dep)}
		default:
			waiting = append(waiting, dep)
		}
	}
	if len(waiting) > 0 {
		return &nodeResult{state: nodeBlocked, message: fmt.Sprintf("%s: waiting for %s", n.ID, strings.Join(waiting, ", "))}
	}
	return nil
}

// rendered is one rendered child and the index of the item it renders.
type rendered struct {
	item int
	u    *unstructured.Unstructured
}

// evalChildren renders and applies every iteration of a node (plan
// expanded them), a batch at a time (renderBatch), so that one reconcile
// never holds more than a batch of rendered objects it has not applied
// yet. The children of every node together are bounded by the graph's
// Limits (MaxChildren, counted by Iterations before a level is applied;
// MaxRenderedBytes, counted by Render).
//
// The answers are kept only for a node whose observed value something reads
// (graph.Graph.Reads); nothing can tell another node's is missing.
func (ev evaluator) evalChildren(o *Outcome, inst *unstructured.Unstructured, n *graph.Node, iterations []map[string]any) *nodeResult {
	r := &nodeResult{state: nodeReady}
	keep := ev.e.reads[n.ID]
	var items []any
	if keep {
		items = make([]any, 0, len(iterations))
	}
	batch := ev.renderBatch()
	budget := graph.BudgetFrom(o.ctx)
	for next := 0; next < len(iterations); {
		desired := make([]rendered, 0, min(batch, len(iterations)-next))
		for from := renderedBytes(budget); next < len(iterations) && len(desired) < batch && renderedBytes(budget)-from < renderBatchBytes; next++ {
			u, err := n.Render(o.ctx, o.vals, iterations[next])
			if err != nil {
				failedR := evalError(n, "template", err)
				failedR.entries = r.entries // applied already: not to be pruned
				return failedR
			}
			desired = append(desired, rendered{item: next, u: u})
		}
		for _, a := range ev.applyAll(o, inst, n, desired, keep) {
			if a.err != nil {
				return applyFailure(n, a, r, o)
			}
			r.entries = append(r.entries, a.entry)
			if keep {
				items = append(items, a.observed)
			}
		}
	}
	if held := answersHeld.Load(); held != nil {
		(*held)(n.ID, len(items))
	}
	if !keep {
		return r // nothing reads it: no readyWhen either
	}
	r.observed = observedValue(n.Collection, items)
	return ev.readiness(o.ctx, n, o.vals, r, items)
}

// renderBatch is how many children of one node are rendered before they
// are applied: a few rounds of ItemConcurrency, fewer when they pass
// renderBatchBytes.
func (ev evaluator) renderBatch() int {
	return 4 * max(ev.e.opts.ItemConcurrency, 1)
}

// renderBatchBytes bounds the bytes of one batch of rendered children (as
// the Budget counts them, Limits.MaxRenderedBytes): children of a megabyte
// are applied a few at a time, not thirty-two.
const renderBatchBytes = 8 << 20

// renderedBytes is what b counted as rendered so far; 0 without a Budget.
func renderedBytes(b *graph.Budget) int64 {
	if b == nil {
		return 0
	}
	return b.Rendered()
}

// answersHeld, if set (tests), is told how many answers of the API server
// a node's children held once they were all applied: none for a node
// nothing reads.
var answersHeld atomic.Pointer[func(node string, answers int)]

// OnAnswersHeld has f told, until the test ends, how many answers of the
// API server each node's children held once they were all applied.
func OnAnswersHeld(t interface{ Cleanup(func()) }, f func(node string, answers int)) {
	answersHeld.Store(&f)
	t.Cleanup(func() { answersHeld.Store(nil) })
}

// applyFailure turns a child's apply error into the node's result: a
// child being deleted is waited for, a cluster that does not answer too,
// one that belongs to someone else is a conflict, anything else an apply
// failure. Children applied before the failure stay in r.entries so that
// they are not pruned.
func applyFailure(n *graph.Node, a appliedChild, r *nodeResult, o *Outcome) *nodeResult {
	r.err = a.err
	var placeErr *placementError
	switch {
	case errors.Is(a.err, errChildDeleting):
		r.state, r.reason = nodeDeleting, ReasonResourceDeleting
		r.message = fmt.Sprintf("%s: %v", n.ID, a.err)
	case errors.As(a.err, &placeErr):
		r.state, r.reason = nodeFailed, ReasonEvaluationFailed
		r.message = fmt.Sprintf("%s: %v", n.ID, a.err)
	case unreachable(a.err):
		r.state = nodeUnreachable
		o.down.set(a.entry.Cluster, a.err)
		r.message = fmt.Sprintf("%s: %v", n.ID, unreachableError(a.entry.Cluster, a.err))
	case errors.Is(a.err, ErrNotOwned):
		r.state, r.reason = nodeFailed, ReasonOwnershipConflict
		r.message = fmt.Sprintf("%s: %v", n.ID, a.err)
	case errors.Is(a.err, ErrOutsideNamespace):
		r.state, r.reason = nodeFailed, ReasonOutsideNamespace
		r.message = fmt.Sprintf("%s: %v", n.ID, a.err)
	default:
		r.state, r.reason = nodeFailed, ReasonApplyFailed
		r.message = fmt.Sprintf("%s: applying %s %s%s: %v", n.ID, a.entry.Kind, a.entry.objectName(), a.where, a.err)
	}
	return r
}

// appliedChild is the answer to one child's apply.
type appliedChild struct {
	observed map[string]any
	entry    Entry
	// where names the child's cluster in messages (place.where).
	where string
	err   error
}

// applyAll applies a node's children, up to Options.ItemConcurrency at
// once, and returns the answers in the children's order.
func (ev evaluator) applyAll(o *Outcome, inst *unstructured.Unstructured, n *graph.Node, desired []rendered, keep bool) []appliedChild {
	out := make([]appliedChild, len(desired))
	if len(desired) == 1 {
		out[0] = ev.applySafely(o, inst, n, desired[0], keep)
		return out
	}
	sem := make(chan struct{}, ev.e.opts.ItemConcurrency)
	var wg sync.WaitGroup
	for i, d := range desired {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = ev.applySafely(o, inst, n, d, keep)
		})
	}
	wg.Wait()
	return out
}

// applySafely is applyChild with a panic turned into the child's error.
func (ev evaluator) applySafely(o *Outcome, inst *unstructured.Unstructured, n *graph.Node, d rendered, keep bool) (a appliedChild) {
	defer func() {
		if p := recover(); p != nil {
			u := d.u
			a.entry = Entry{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Node: n.ID}
			a.err = panicError("applying "+u.GetKind()+" "+u.GetName(), p)
		}
	}()
	return ev.applyChild(o, inst, n, d, keep)
}

// readiness evaluates readyWhen on every observed item.
func (ev evaluator) readiness(ctx context.Context, n *graph.Node, vals graph.Values, r *nodeResult, items []any) *nodeResult {
	for _, item := range items {
		obj, _ := item.(map[string]any)
		ready, err := n.Ready(ctx, vals, obj)
		if err != nil && !errors.Is(err, graph.ErrPending) {
			failedR := evalError(n, "readyWhen", err)
			failedR.entries, failedR.refs = r.entries, r.refs
			return failedR
		}
		if !ready || err != nil {
			r.state = nodeNotReady
			r.message = fmt.Sprintf("%s: waiting for readyWhen", n.ID)
			return r
		}
	}
	return r
}

func observedValue(collection bool, items []any) any {
	if collection {
		return items
	}
	if len(items) == 1 {
		return items[0]
	}
	return nil
}

// evalError classifies an evaluation error: pending data or a failure.
func evalError(n *graph.Node, what string, err error) *nodeResult {
	if errors.Is(err, graph.ErrPending) {
		return &nodeResult{state: nodePending, message: fmt.Sprintf("%s: %s waits for data: %v", n.ID, what, err)}
	}
	if errors.Is(err, graph.ErrLimit) {
		return failed(n, ReasonLimitExceeded, fmt.Errorf("%s: %w", what, err))
	}
	return failed(n, ReasonEvaluationFailed, fmt.Errorf("%s: %w", what, err))
}

func failed(n *graph.Node, reason string, err error) *nodeResult {
	return &nodeResult{state: nodeFailed, reason: reason, err: err, message: fmt.Sprintf("%s: %v", n.ID, err)}
}
