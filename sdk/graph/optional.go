package graph

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// CEL's optional library evaluates opt.or(other) and opt.orValue(value)
// lazily: the alternative runs only when the optional is empty. cel-go wires
// that in through a program option; since we plan interpretables ourselves
// (see planner), this decorator does the same.

func lazyOptionalOr(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok || len(call.Args()) != 2 {
		return i, nil
	}
	args := call.Args()
	switch {
	case call.Function() == "or" && (call.OverloadID() == "" || call.OverloadID() == "optional_or_optional"):
		return &optionalOr{id: call.ID(), opt: args[0], alt: args[1], unwrap: false}, nil
	case call.Function() == "orValue" && (call.OverloadID() == "" || call.OverloadID() == "optional_orValue_value"):
		return &optionalOr{id: call.ID(), opt: args[0], alt: args[1], unwrap: true}, nil
	}
	return i, nil
}

// optionalOr returns opt (or its value, when unwrap) if it holds one, else
// evaluates alt.
type optionalOr struct {
	id       int64
	opt, alt interpreter.InterpretableV2
	unwrap   bool
}

func (o *optionalOr) ID() int64 { return o.id }

func (o *optionalOr) Eval(act interpreter.Activation) ref.Val {
	return o.Exec(interpreter.AsFrame(act))
}

func (o *optionalOr) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	v := o.opt.Exec(frame)
	opt, ok := v.(*types.Optional)
	switch {
	case types.IsUnknownOrError(v):
		return v
	case !ok:
		return types.NoSuchOverloadErr()
	case opt.HasValue() && o.unwrap:
		return opt.GetValue()
	case opt.HasValue():
		return opt
	}
	return o.alt.Exec(frame)
}
