package graph

import (
	"context"
	"time"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// meter accounts the evaluations of one scope (one call of an evaluation
// method), one expression at a time: the cost units each spends
// (comprehension steps and size-aware function prices, see guard.go), its
// deadline and its share of the instance's Budget. It replaces cel-go's
// runtime cost tracker, whose bookkeeping grows with the length of a
// comprehension and so makes tracked evaluation quadratic (see doc.go).
//
// What the scope's evaluations spent is charged to the Budget when the
// scope is done (flush), once rather than per expression. A meter is not
// safe for concurrent use: one scope runs on one goroutine. It lives
// inside the scope, so that it costs no allocation.
type meter struct {
	lim    *Limits
	budget *Budget
	ctx    context.Context
	// pending and pendingTime are what the scope's finished evaluations
	// spent, not yet charged to the budget.
	pending     uint64
	pendingTime time.Duration

	// The running evaluation: spent is what it spent; limit what it may
	// spend: the per-expression limit, or what is left of the instance's
	// budget when that is less (fromBudget).
	spent, limit uint64
	fromBudget   bool
	// checkAt is the spending at which the clock and the context are read
	// next. started is the first read: an evaluation is timed from there,
	// so that one too cheap to reach it reads no clock at all (cost bounds
	// it, and the many cheap evaluations of a reconcile, together).
	checkAt  uint64
	started  time.Time
	deadline time.Time
	// err is why the evaluation was stopped; once set, every further call
	// and comprehension step fails at once.
	err error
}

// meterCheckEvery is how many cost units pass between two reads of the
// clock: reading it costs about as much as a cheap function call.
const meterCheckEvery = 256

// start resets m for a new evaluation.
func (m *meter) start() {
	m.spent, m.limit, m.fromBudget = 0, m.lim.ExpressionCost, false
	m.checkAt, m.started, m.err = meterCheckEvery, time.Time{}, nil
	left := m.budget.costLeft()
	if left <= m.pending {
		left = 0
	} else {
		left -= m.pending
	}
	if left < m.limit {
		m.limit, m.fromBudget = left, true
	}
	if m.limit == 0 {
		m.err = m.budget.errCost()
	}
}

// finish adds what the evaluation spent to what the scope owes the budget.
func (m *meter) finish() {
	m.pending += m.spent
	if !m.started.IsZero() {
		m.pendingTime += time.Since(m.started)
	}
}

// flush charges the budget with what the scope's evaluations spent.
func (m *meter) flush() {
	if m.budget == nil {
		return
	}
	m.budget.cost.Add(m.pending)
	m.budget.evalTime.Add(int64(m.pendingTime))
	m.pending, m.pendingTime = 0, 0
}

// charge adds c units and reports whether the evaluation may go on.
func (m *meter) charge(c uint64) bool {
	if m.err != nil {
		return false
	}
	m.spent += c
	if m.spent > m.limit || m.spent < c {
		m.spent = m.limit
		if m.fromBudget {
			m.err = m.budget.errCost()
		} else {
			m.err = errorf(ErrLimit, "the expression costs more than %d units (Limits.ExpressionCost)", m.limit)
		}
		return false
	}
	if m.spent >= m.checkAt {
		m.checkAt = m.spent + meterCheckEvery
		return m.checkClock()
	}
	return true
}

// refuse stops the evaluation with err (a function refused its inputs).
func (m *meter) refuse(err error) {
	if m.err == nil {
		m.err = err
	}
}

// checkClock reads the clock and the context, and reports whether the
// evaluation may go on.
func (m *meter) checkClock() bool {
	if m.err != nil {
		return false
	}
	now := time.Now()
	if m.started.IsZero() {
		m.started, m.deadline = now, now.Add(m.lim.ExpressionTimeout)
	}
	switch {
	case now.After(m.deadline):
		m.err = errorf(ErrLimit, "the expression ran longer than %s (Limits.ExpressionTimeout)", m.lim.ExpressionTimeout)
	case time.Duration(m.budget.evalTime.Load())+m.pendingTime+now.Sub(m.started) > m.budget.limits.InstanceTimeout:
		m.err = m.budget.errTime()
	default:
		if err := m.ctx.Err(); err != nil {
			m.err = errorf(ErrLimit, "evaluation stopped: %w", context.Cause(m.ctx))
		}
	}
	return m.err == nil
}

// meterOf finds the meter of the evaluation an activation belongs to: the
// scope at the root of the activations cel-go stacks (comprehensions,
// bindings), inside the execution frames it wraps them in. Nil when the
// activation is not ours.
func meterOf(vars interpreter.Activation) *meter {
	for a := vars; a != nil; {
		switch v := a.(type) {
		case *scope:
			if v.meter.lim == nil {
				return nil
			}
			return &v.meter
		case *interpreter.ExecutionFrame:
			a = v.Unwrap()
		default:
			a = a.Parent()
		}
	}
	return nil
}

// loopConditions returns the ids of the loop conditions of the
// comprehensions in e (nil when it has none).
func loopConditions(e celast.Expr) map[int64]bool {
	var conds map[int64]bool
	celast.PostOrderVisit(e, celast.NewExprVisitor(func(x celast.Expr) {
		if x.Kind() == celast.ComprehensionKind {
			if conds == nil {
				conds = map[int64]bool{}
			}
			conds[x.AsComprehension().LoopCondition().ID()] = true
		}
	}))
	return conds
}

// chargeLoops returns the decorator that charges one unit to the
// evaluation's meter each time a comprehension asks its loop condition
// whether to go on (the conditions are the nodes whose ids are in conds),
// and ends the loop once the meter refuses: a loop whose step calls
// nothing is bounded too, and a refused evaluation stops at once. The
// evaluation then fails with the meter's error (see eval), whatever the
// comprehension returns.
func chargeLoops(conds map[int64]bool) interpreter.InterpretableDecoratorV2 {
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		if !conds[i.ID()] {
			return i, nil
		}
		return &chargedCondition{InterpretableV2: i}, nil
	}
}

// chargedCondition is a loop condition that costs one unit and is false
// once the meter refuses.
type chargedCondition struct {
	interpreter.InterpretableV2
}

func (c *chargedCondition) Eval(vars interpreter.Activation) ref.Val {
	return c.Exec(interpreter.AsFrame(vars))
}

func (c *chargedCondition) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	if m := meterOf(frame); m != nil && !m.charge(1) {
		return types.False
	}
	return c.InterpretableV2.Exec(frame)
}
