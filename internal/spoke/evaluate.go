package spoke

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// nodeState is where one node got to in one reconcile.
type nodeState int

const (
	nodeReady    nodeState = iota // applied (or read) and ready
	nodeNotReady                  // applied, readyWhen not yet true
	nodeExcluded                  // includeWhen false, or a dependency excluded
	nodePending                   // waits for data (ErrPending, missing external)
	nodeDeleting                  // a child is being deleted; waits until it is gone
	nodeBlocked                   // a dependency is not ready yet
	nodeFailed                    // evaluation or apply error
)

// Failure reasons, used in conditions.
const (
	reasonEvaluationFailed = "EvaluationFailed"
	reasonApplyFailed      = "ApplyFailed"
	// reasonLimitExceeded is an evaluation stopped by one of the graph's
	// Limits (graph.ErrLimit): the message names the resource, the
	// expression (truncated) and the limit.
	reasonLimitExceeded = "LimitExceeded"
)

// nodeResult is the outcome of one node.
type nodeResult struct {
	state    nodeState
	observed any // map[string]any, or []any for collections and selectors
	entries  []InventoryEntry
	refs     []resolvedRef
	reason   string // for nodeFailed
	message  string // names the node; set for every state but nodeReady
	err      error
}

// outcome is the result of evaluating the whole graph for one instance.
type outcome struct {
	// ctx carries the reconcile's evaluation budget (graph.WithBudget):
	// every evaluation of this reconcile, status projections included,
	// charges it.
	ctx      context.Context
	budget   *graph.Budget
	vals     graph.Values
	nodes    map[string]*nodeResult
	applied  []InventoryEntry
	refs     []resolvedRef
	failed   *nodeResult // first failure in DAG order
	waiting  []string    // messages of nodes not ready, pending, deleting or blocked
	deleting []string    // messages of nodes waiting for a child being deleted
	// full asks every child to be applied, even one the memory says is
	// unchanged: a periodic resync.
	full bool
}

// evaluator walks a member's graph for one instance: it evaluates each
// node's expressions, has the applier write its children (or reads its
// external reference, external.go) and gathers what each node got to in
// an outcome, from which the instanceWriter writes status.
type evaluator struct{ m *member }

// evaluate walks the graph level by level, applying the nodes of one level
// in parallel. A node runs only when every dependency is ready. full
// bypasses the memory of unchanged applies.
//
// Each level is expanded before anything of it is applied (plan): when its
// nodes' children together pass Limits.MaxChildren, none of them is
// applied, so an instance that asks for too many children across its
// resources writes none of that level rather than the first thousands.
func (e evaluator) evaluate(inst *unstructured.Unstructured, full bool) *outcome {
	m := e.m
	limits := m.g.Limits().WithDefaults()
	budget := graph.NewBudget(limits)
	out := &outcome{
		ctx: graph.WithBudget(m.ctx, budget), budget: budget,
		vals: graph.Values{"schema": inst.Object}, nodes: map[string]*nodeResult{}, full: full,
	}
	m.bindCluster(out.vals) // cluster_values.go
	for _, level := range m.g.Levels {
		results := make([]*nodeResult, len(level))
		iterations := make([][]map[string]any, len(level))
		eachNode(level, func(i int, n *graph.Node) { iterations[i], results[i] = e.planSafely(inst, n, out) })
		if children := budget.Children(); children > int64(limits.MaxChildren) {
			for i, n := range level {
				if results[i] == nil {
					results[i] = tooManyChildren(n, children, limits.MaxChildren)
				}
			}
		}
		eachNode(level, func(i int, n *graph.Node) {
			if results[i] == nil {
				results[i] = e.childrenSafely(inst, n, out, iterations[i])
			}
		})
		for i, n := range level {
			out.record(n, results[i])
		}
	}
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

// tooManyChildren is the result of a node of a level whose nodes' children
// together pass Limits.MaxChildren: it applies nothing.
func tooManyChildren(n *graph.Node, children int64, limit int) *nodeResult {
	return failed(n, reasonLimitExceeded, fmt.Errorf("forEach: %w: nothing applied: the instance's resources would have %d children or more together, over the limit of %d (Limits.MaxChildren)",
		graph.ErrLimit, children, limit))
}

func (o *outcome) record(n *graph.Node, r *nodeResult) {
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
	case nodeNotReady, nodePending, nodeBlocked:
		o.waiting = append(o.waiting, r.message)
	case nodeDeleting:
		o.waiting = append(o.waiting, r.message)
		o.deleting = append(o.deleting, r.message)
	}
}

// resolved reports whether the node's desired children are fully known, so
// that its old children may be pruned.
func (o *outcome) resolved(id string) bool {
	r, ok := o.nodes[id]
	if !ok {
		return true // no longer in the graph
	}
	return r.state == nodeReady || r.state == nodeNotReady || r.state == nodeExcluded
}

// planSafely is plan, with a panic turned into the node's failure.
func (e evaluator) planSafely(inst *unstructured.Unstructured, n *graph.Node, o *outcome) (its []map[string]any, r *nodeResult) {
	defer func() {
		if p := recover(); p != nil {
			its, r = nil, failed(n, reasonEvaluationFailed, panicError("node "+n.ID, p))
		}
	}()
	return e.plan(inst, n, o)
}

// plan decides whether a node runs and expands its iterations, counting
// its children (Node.Iterations): a result means the node is done (held
// back, excluded, failed, or an external reference read); none means its
// iterations are to be applied.
func (e evaluator) plan(inst *unstructured.Unstructured, n *graph.Node, o *outcome) ([]map[string]any, *nodeResult) {
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
		return nil, e.external(o.ctx, inst, n, o.vals)
	}
	iterations, err := n.Iterations(o.ctx, o.vals)
	if err != nil {
		return nil, evalError(n, "forEach", err)
	}
	return iterations, nil
}

// childrenSafely is evalChildren, with a panic turned into the node's failure.
func (e evaluator) childrenSafely(inst *unstructured.Unstructured, n *graph.Node, o *outcome, iterations []map[string]any) (r *nodeResult) {
	defer func() {
		if p := recover(); p != nil {
			r = failed(n, reasonEvaluationFailed, panicError("node "+n.ID, p))
		}
	}()
	return e.evalChildren(o.ctx, inst, n, o.vals, iterations, o.full)
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

// evalChildren renders and applies every iteration of a node (plan
// expanded them), a batch at a time (renderBatch), so that one reconcile
// never holds more than a batch of rendered objects it has not applied
// yet. The children of every node together are bounded by the graph's
// Limits (MaxChildren, counted by Iterations before a level is applied;
// MaxRenderedBytes, counted by Render).
//
// The answers are kept only for a node whose observed value something reads
// (graph.Graph.Reads); nothing can tell another node's is missing.
func (e evaluator) evalChildren(ctx context.Context, inst *unstructured.Unstructured, n *graph.Node, vals graph.Values, iterations []map[string]any, full bool) *nodeResult {
	r := &nodeResult{state: nodeReady}
	keep := e.m.c.reads[n.ID]
	var items []any
	if keep {
		items = make([]any, 0, len(iterations))
	}
	batch := e.renderBatch()
	budget := graph.BudgetFrom(ctx)
	for next := 0; next < len(iterations); {
		desired := make([]*unstructured.Unstructured, 0, min(batch, len(iterations)-next))
		for from := rendered(budget); next < len(iterations) && len(desired) < batch && rendered(budget)-from < renderBatchBytes; next++ {
			u, err := n.Render(ctx, vals, iterations[next])
			if err != nil {
				failedR := evalError(n, "template", err)
				failedR.entries = r.entries // applied already: not to be pruned
				return failedR
			}
			desired = append(desired, u)
		}
		for _, a := range e.applyAll(inst, n, desired, full, keep) {
			if a.err != nil {
				return applyFailure(n, a, r)
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
	return e.readiness(ctx, n, vals, r, items)
}

// renderBatch is how many children of one node are rendered before they
// are applied: a few rounds of ItemConcurrency, fewer when they pass
// renderBatchBytes.
func (e evaluator) renderBatch() int {
	return 4 * max(e.m.c.opts.ItemConcurrency, 1)
}

// renderBatchBytes bounds the bytes of one batch of rendered children (as
// the Budget counts them, Limits.MaxRenderedBytes): children of a megabyte
// are applied a few at a time, not thirty-two.
const renderBatchBytes = 8 << 20

// rendered is what b counted as rendered so far; 0 without a Budget.
func rendered(b *graph.Budget) int64 {
	if b == nil {
		return 0
	}
	return b.Rendered()
}

// answersHeld, if set (tests), is told how many answers of the API server
// a node's children held once they were all applied: none for a node
// nothing reads.
var answersHeld atomic.Pointer[func(node string, answers int)]

// applyFailure turns a child's apply error into the node's result: a
// child being deleted is waited for, one that belongs to someone else is a
// conflict, anything else an apply failure. Children applied before the
// failure stay in r.entries so that they are not pruned.
func applyFailure(n *graph.Node, a appliedChild, r *nodeResult) *nodeResult {
	r.err = a.err
	switch {
	case errors.Is(a.err, errChildDeleting):
		r.state, r.reason = nodeDeleting, reasonResourceDeleting
		r.message = fmt.Sprintf("%s: %v", n.ID, a.err)
	case errors.Is(a.err, ErrNotOwned):
		r.state, r.reason = nodeFailed, reasonOwnershipConflict
		r.message = fmt.Sprintf("%s: %v", n.ID, a.err)
	case errors.Is(a.err, ErrOutsideNamespace):
		r.state, r.reason = nodeFailed, reasonOutsideNamespace
		r.message = fmt.Sprintf("%s: %v", n.ID, a.err)
	default:
		r.state, r.reason = nodeFailed, reasonApplyFailed
		r.message = fmt.Sprintf("%s: applying %s %s: %v", n.ID, a.entry.Kind, a.entry.objectName(), a.err)
	}
	return r
}

// appliedChild is the answer to one child's apply.
type appliedChild struct {
	observed map[string]any
	entry    InventoryEntry
	err      error
}

// applyAll applies a node's children, up to Options.ItemConcurrency at
// once, and returns the answers in the children's order.
func (e evaluator) applyAll(inst *unstructured.Unstructured, n *graph.Node, desired []*unstructured.Unstructured, full, keep bool) []appliedChild {
	out := make([]appliedChild, len(desired))
	if len(desired) == 1 {
		out[0] = e.applySafely(inst, n, desired[0], full, keep)
		return out
	}
	sem := make(chan struct{}, e.m.c.opts.ItemConcurrency)
	var wg sync.WaitGroup
	for i, u := range desired {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = e.applySafely(inst, n, u, full, keep)
		})
	}
	wg.Wait()
	return out
}

// applySafely is applyChild with a panic turned into the child's error.
func (e evaluator) applySafely(inst *unstructured.Unstructured, n *graph.Node, u *unstructured.Unstructured, full, keep bool) (a appliedChild) {
	defer func() {
		if p := recover(); p != nil {
			a.entry = InventoryEntry{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Node: n.ID}
			a.err = panicError("applying "+u.GetKind()+" "+u.GetName(), p)
		}
	}()
	a.observed, a.entry, a.err = e.m.applier.child(inst, n, u, full, keep)
	return a
}

// readiness evaluates readyWhen on every observed item.
func (e evaluator) readiness(ctx context.Context, n *graph.Node, vals graph.Values, r *nodeResult, items []any) *nodeResult {
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
		return failed(n, reasonLimitExceeded, fmt.Errorf("%s: %w", what, err))
	}
	return failed(n, reasonEvaluationFailed, fmt.Errorf("%s: %w", what, err))
}

func failed(n *graph.Node, reason string, err error) *nodeResult {
	return &nodeResult{state: nodeFailed, reason: reason, err: err, message: fmt.Sprintf("%s: %v", n.ID, err)}
}
