package graph

import (
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	"github.com/google/cel-go/interpreter/functions"
	"k8s.io/apiserver/pkg/cel/library"
)

// Every function call of a planned expression goes through a guard (this
// file), which finds the evaluation's meter in the activation:
//
//   - a function listed in callCosts (callcost.go) is priced from its
//     arguments before it runs: a function whose output grows with its
//     inputs is refused when the output would pass Limits.MaxValueBytes,
//     and every such function is charged for the work its inputs imply
//     (quadratic ones for the product of their input sizes), so that it is
//     refused before it allocates or runs rather than stopped after;
//   - any other call costs one unit.
//
// The guard is installed once, in the shared planner, for every library,
// ours and the ones we do not own; kro's own functions need no checks of
// their own.

// regexConstants are the functions whose constant patterns are compiled
// when the expression is planned, not at each call.
var regexConstants = []*interpreter.RegexOptimization{
	interpreter.MatchesRegexOptimization, library.FindRegexOptimization, library.FindAllRegexOptimization,
}

// guardCalls returns the decorator that puts a guard around every call.
// fns are the environment's functions: a call the checker could not bind
// to one overload (its arguments are dyn) is priced at run time by the
// overload its argument values select.
//
// cel-go evaluates a planned expression through Exec with an execution
// frame, and through Eval only at its root: every guard implements both,
// Eval as Exec of the frame the activation stands for.
func guardCalls(disp interpreter.Dispatcher, fns map[string]*decls.FunctionDecl) interpreter.InterpretableDecoratorV2 {
	dynamic := dynamicPrices(fns)
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok {
			return i, nil
		}
		if g := pricedEquality(call); g != nil {
			return g, nil
		}
		price := callCosts[call.OverloadID()]
		if price == nil && call.OverloadID() == "" {
			price = dynamic[call.Function()]
		}
		if price == nil {
			return &countedCall{InterpretableCall: call}, nil
		}
		if g, ok, err := pricedRegexCall(call, price); ok || err != nil {
			return g, err
		}
		if g := pricedFromDispatcher(disp, call, price); g != nil {
			return g, nil
		}
		return &countedCall{InterpretableCall: call}, nil
	}
}

// dynamicPrices returns, for each function with a priced overload, a
// price that picks the overload the argument values select at run time,
// as cel-go's dynamic dispatch does; any other overload costs one unit.
func dynamicPrices(fns map[string]*decls.FunctionDecl) map[string]priceFunc {
	type candidate struct {
		args  []*types.Type
		price priceFunc
	}
	byName := map[string][]candidate{}
	for name, fn := range fns {
		for _, o := range fn.OverloadDecls() {
			if p := callCosts[o.ID()]; p != nil {
				byName[name] = append(byName[name], candidate{args: o.ArgTypes(), price: p})
			}
		}
	}
	out := make(map[string]priceFunc, len(byName))
	for name, cands := range byName {
		out[name] = func(args []ref.Val, l *Limits) (uint64, error) {
			for _, c := range cands {
				if matchesValues(c.args, args) {
					return c.price(args, l)
				}
			}
			return 1, nil
		}
	}
	return out
}

// matchesValues reports whether values may be passed as arguments of the
// given types.
func matchesValues(params []*types.Type, values []ref.Val) bool {
	if len(params) != len(values) {
		return false
	}
	for i, p := range params {
		if !p.IsAssignableRuntimeType(values[i]) {
			return false
		}
	}
	return true
}

// pricedEquality prices == and != (cel-go plans them as nodes of their
// own, not through the dispatcher) by the smaller operand: comparing two
// long lists or strings walks them.
func pricedEquality(call interpreter.InterpretableCall) interpreter.InterpretableV2 {
	if (call.Function() != "_==_" && call.Function() != "_!=_") || len(call.Args()) != 2 {
		return nil
	}
	return &pricedEq{InterpretableCall: call, lhs: call.Args()[0], rhs: call.Args()[1], negate: call.Function() == "_!=_"}
}

// pricedEq is == or != priced by the smaller operand, as cel-go evaluates
// them (an unknown or error operand is the result).
type pricedEq struct {
	interpreter.InterpretableCall
	lhs, rhs interpreter.InterpretableV2
	negate   bool
}

func (e *pricedEq) Eval(vars interpreter.Activation) ref.Val {
	return e.Exec(interpreter.AsFrame(vars))
}

func (e *pricedEq) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	l := e.lhs.Exec(frame)
	r := e.rhs.Exec(frame)
	if types.IsUnknownOrError(l) {
		return l
	}
	if types.IsUnknownOrError(r) {
		return r
	}
	if m := meterOf(frame); m != nil && !m.charge(min(scaled(l), scaled(r))) {
		return types.LabelErrNode(e.ID(), types.WrapErr(m.err))
	}
	eq := types.Equal(l, r)
	if e.negate {
		return types.Bool(eq != types.True)
	}
	return eq
}

// countedCall is a call that costs one unit; it runs as cel-go planned it.
type countedCall struct {
	interpreter.InterpretableCall
}

func (c *countedCall) Eval(vars interpreter.Activation) ref.Val {
	return c.Exec(interpreter.AsFrame(vars))
}

func (c *countedCall) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	if m := meterOf(frame); m != nil && !m.charge(1) {
		return types.LabelErrNode(c.ID(), types.WrapErr(m.err))
	}
	return c.InterpretableCall.Exec(frame)
}

// pricedCall is a call priced from its arguments before it runs. It
// evaluates the arguments itself and calls the function as cel-go would
// (strictness, operand trait, receiver dispatch).
type pricedCall struct {
	interpreter.InterpretableCall
	args      []interpreter.InterpretableV2
	price     priceFunc
	nonStrict bool
	trait     int
	invoke    func([]ref.Val) ref.Val // nil: receiver dispatch only
}

func (c *pricedCall) Eval(vars interpreter.Activation) ref.Val {
	return c.Exec(interpreter.AsFrame(vars))
}

func (c *pricedCall) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	vals := make([]ref.Val, len(c.args))
	for i, a := range c.args {
		vals[i] = a.Exec(frame)
		if !c.nonStrict && types.IsUnknownOrError(vals[i]) {
			return vals[i]
		}
	}
	m := meterOf(frame)
	lim := defaultLimits
	if m != nil {
		lim = m.lim
	}
	cost, err := c.price(vals, lim)
	if err != nil {
		if m != nil {
			m.refuse(err)
		}
		return types.LabelErrNode(c.ID(), types.WrapErr(err))
	}
	if m != nil && !m.charge(cost) {
		return types.LabelErrNode(c.ID(), types.WrapErr(m.err))
	}
	return c.call(vals)
}

// call dispatches as cel-go's planned calls do.
func (c *pricedCall) call(vals []ref.Val) ref.Val {
	if len(vals) > 0 {
		arg0 := vals[0]
		strict := !c.nonStrict
		if c.invoke != nil && (c.trait == 0 || (!strict && types.IsUnknownOrError(arg0)) || arg0.Type().HasTrait(c.trait)) {
			return types.LabelErrNode(c.ID(), c.invoke(vals))
		}
		if arg0.Type().HasTrait(traits.ReceiverType) {
			return types.LabelErrNode(c.ID(), arg0.(traits.Receiver).Receive(c.Function(), c.OverloadID(), vals[1:]))
		}
		return types.NewErrWithNodeID(c.ID(), "no such overload: %s", c.Function())
	}
	if c.invoke == nil {
		return types.NewErrWithNodeID(c.ID(), "no such overload: %s", c.Function())
	}
	return types.LabelErrNode(c.ID(), c.invoke(vals))
}

// pricedFromDispatcher prices call with the implementation the planner
// chose for it: the overload by id, else by function name, as a unary,
// binary or variadic operation by argument count. Nil when none is found.
func pricedFromDispatcher(disp interpreter.Dispatcher, call interpreter.InterpretableCall, price priceFunc) *pricedCall {
	def, _ := disp.FindOverload(call.OverloadID())
	if def == nil {
		def, _ = disp.FindOverload(call.Function())
	}
	if def == nil {
		return nil
	}
	invoke := invoker(def, len(call.Args()))
	if invoke == nil {
		return nil
	}
	return &pricedCall{
		InterpretableCall: call, args: call.Args(), price: price,
		nonStrict: def.NonStrict, trait: def.OperandTrait, invoke: invoke,
	}
}

// invoker picks the operation of def that cel-go's planner calls for n
// arguments.
func invoker(def *functions.Overload, n int) func([]ref.Val) ref.Val {
	switch {
	case n == 1 && def.Unary != nil:
		return func(v []ref.Val) ref.Val { return def.Unary(v[0]) }
	case n == 2 && def.Binary != nil:
		return func(v []ref.Val) ref.Val { return def.Binary(v[0], v[1]) }
	case def.Function != nil:
		return func(v []ref.Val) ref.Val { return def.Function(v...) }
	}
	return nil
}

// pricedRegexCall prices a call whose pattern is a constant, compiling the
// pattern once as cel-go's regex optimizations do. The optimized call is
// built over argument slots that read the values the guard evaluated.
func pricedRegexCall(call interpreter.InterpretableCall, price priceFunc) (interpreter.InterpretableV2, bool, error) {
	var opt *interpreter.RegexOptimization
	for _, o := range regexConstants {
		if o.Function == call.Function() && (o.OverloadID == "" || o.OverloadID == call.OverloadID()) {
			opt = o
		}
	}
	args := call.Args()
	if opt == nil || opt.RegexIndex >= len(args) {
		return nil, false, nil
	}
	pattern, ok := args[opt.RegexIndex].(interpreter.InterpretableConst)
	if !ok {
		return nil, false, nil
	}
	s, ok := pattern.Value().(types.String)
	if !ok {
		return nil, false, nil
	}
	slots := make([]interpreter.InterpretableV2, len(args))
	for i, a := range args {
		slots[i] = argSlot{id: a.ID(), index: i}
	}
	optimized, err := opt.Factory(&slottedCall{InterpretableCall: call, slots: slots}, string(s))
	if err != nil {
		// A malformed pattern (a compile warning) fails when the call is
		// evaluated, as on kro.
		return nil, false, nil //nolint:nilerr
	}
	invoke := func(vals []ref.Val) ref.Val { return optimized.Eval(slotValues(vals)) }
	return &pricedCall{InterpretableCall: call, args: args, price: price, invoke: invoke}, true, nil
}

// slottedCall is call with its arguments replaced by slots.
type slottedCall struct {
	interpreter.InterpretableCall
	slots []interpreter.InterpretableV2
}

func (c *slottedCall) Args() []interpreter.InterpretableV2 { return c.slots }

// argSlot evaluates to the index-th value of the slotValues it is given.
type argSlot struct {
	id    int64
	index int
}

func (s argSlot) ID() int64 { return s.id }

func (s argSlot) Eval(vars interpreter.Activation) ref.Val {
	if f, ok := vars.(*interpreter.ExecutionFrame); ok {
		vars = f.Unwrap()
	}
	return vars.(slotValues)[s.index]
}

func (s argSlot) Exec(frame *interpreter.ExecutionFrame) ref.Val { return s.Eval(frame) }

// slotValues is the activation of a slotted call: the argument values.
type slotValues []ref.Val

func (slotValues) ResolveName(string) (any, bool) { return nil, false }
func (slotValues) Parent() interpreter.Activation { return nil }
