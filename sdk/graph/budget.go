package graph

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Budget is what all evaluations of one reconcile of one instance may
// spend together: CEL cost units (Limits.InstanceCost), wall-clock time
// (Limits.InstanceTimeout), bytes rendered for children
// (Limits.MaxRenderedBytes) and children (Limits.MaxChildren). A reconcile
// makes one with NewBudget, carries it in its context with WithBudget, and
// every evaluation method (Node.Render, Node.Iterations, Graph.Status...)
// called with that context charges it. An evaluation called with a
// context that carries no Budget gets a fresh one of the graph's limits,
// so the per-expression limits always hold.
//
// A Budget is safe for concurrent use: the nodes of one level of the graph
// are evaluated in parallel and share it.
type Budget struct {
	limits   Limits
	started  time.Time
	cost     atomic.Uint64
	rendered atomic.Int64
	children atomic.Int64
	// evalTime is the time the timed evaluations spent (see meter).
	evalTime atomic.Int64
}

// NewBudget starts a budget of the per-instance fields of l (defaults
// filled in). Its time is the time evaluations spend, not the time between
// them: a reconcile's API calls are bounded separately.
func NewBudget(l Limits) *Budget {
	l = l.WithDefaults()
	return &Budget{limits: l, started: time.Now()}
}

type budgetKey struct{}

// WithBudget returns a context that carries b to the evaluations it is
// passed to.
func WithBudget(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// BudgetFrom returns the Budget ctx carries, or nil.
func BudgetFrom(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}

// budgetFor returns ctx's Budget, or a fresh one of l.
func budgetFor(ctx context.Context, l *Limits) *Budget {
	if b := BudgetFrom(ctx); b != nil {
		return b
	}
	return NewBudget(*l)
}

// Spent returns the CEL cost units charged so far.
func (b *Budget) Spent() uint64 { return b.cost.Load() }

// Rendered returns the bytes of children rendered so far.
func (b *Budget) Rendered() int64 { return b.rendered.Load() }

// Children returns the children counted so far (see AddChildren).
func (b *Budget) Children() int64 { return b.children.Load() }

// EvalTime returns the time evaluations have spent so far.
func (b *Budget) EvalTime() time.Duration { return time.Duration(b.evalTime.Load()) }

// AddChildren counts n more children of the instance and returns an error
// wrapping ErrLimit once they pass Limits.MaxChildren. Node.Iterations
// counts the children of every node it expands.
func (b *Budget) AddChildren(n int) error {
	total := b.children.Add(int64(n))
	if total > int64(b.limits.MaxChildren) {
		return errorf(ErrLimit, "the instance would have %d children or more, over the limit of %d (Limits.MaxChildren)", total, b.limits.MaxChildren)
	}
	return nil
}

// reserveRendered takes up to n bytes of the rendering allowance and
// returns how many it got.
func (b *Budget) reserveRendered(n int) int {
	max := int64(b.limits.MaxRenderedBytes)
	for {
		cur := b.rendered.Load()
		if cur >= max {
			return 0
		}
		got := min(int64(n), max-cur)
		if b.rendered.CompareAndSwap(cur, cur+got) {
			return int(got)
		}
	}
}

// releaseRendered gives back bytes reserved and not used.
func (b *Budget) releaseRendered(n int) {
	if n > 0 {
		b.rendered.Add(-int64(n))
	}
}

// costLeft is what the instance may still spend.
func (b *Budget) costLeft() uint64 {
	spent := b.cost.Load()
	if spent >= b.limits.InstanceCost {
		return 0
	}
	return b.limits.InstanceCost - spent
}

// errBudgetCost and errBudgetTime describe an exhausted budget.
func (b *Budget) errCost() error {
	return errorf(ErrLimit, "the instance's evaluations cost more than %d units together (Limits.InstanceCost)", b.limits.InstanceCost)
}

func (b *Budget) errTime() error {
	return errorf(ErrLimit, "the instance's evaluations ran longer than %s together (Limits.InstanceTimeout)", b.limits.InstanceTimeout)
}

// String describes what was spent, for logs.
func (b *Budget) String() string {
	return fmt.Sprintf("cost %d/%d, evaluating %s/%s, rendered %d/%d bytes, %d/%d children",
		b.Spent(), b.limits.InstanceCost, b.EvalTime().Round(time.Millisecond), b.limits.InstanceTimeout,
		b.Rendered(), b.limits.MaxRenderedBytes, b.Children(), b.limits.MaxChildren)
}
