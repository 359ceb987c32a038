package graph

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/parser"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// Names of kro's custom-condition types and variable, as kro spells them.
const (
	conditionTypeName = "kro.run.Condition"
	runtimeTypeName   = "kro.run.Runtime"
	varRuntime        = "runtime"
)

// conditionKeys are the keys runtime.newCondition takes, and the fields of
// a condition value.
var conditionKeys = []string{"type", "status", "reason", "message"}

// conditionDecl and runtimeDecl declare the two object types so that
// cond.status type-checks.
var (
	conditionDecl = func() *apiservercel.DeclType {
		fields := map[string]*apiservercel.DeclField{}
		for _, k := range conditionKeys {
			fields[k] = apiservercel.NewDeclField(k, apiservercel.StringType, false, nil, nil)
		}
		return apiservercel.NewObjectType(conditionTypeName, fields)
	}()
	runtimeDecl = apiservercel.NewObjectType(runtimeTypeName, map[string]*apiservercel.DeclField{})
)

// runtimeLib is kro's library for custom status conditions, available in
// spec.schema.status.conditions entries:
//
//	runtime.newCondition({type: 'X', status: 'True', reason: '', message: ''})
//	runtime.condition(obj, 'Ready')   // obj.status.conditions[type == 'Ready'], or an empty condition
//
// A condition value is a map of the four keys, typed kro.run.Condition.
type runtimeLib struct{}

func (runtimeLib) LibraryName() string { return "kro.runtime" }

func (runtimeLib) ProgramOptions() []cel.ProgramOption { return nil }

func (runtimeLib) CompileOptions() []cel.EnvOption {
	rt, cond := cel.ObjectType(runtimeTypeName), cel.ObjectType(conditionTypeName)
	return []cel.EnvOption{
		cel.Function("newCondition", cel.MemberOverload("runtime_newCondition_map",
			[]*cel.Type{rt, cel.MapType(cel.StringType, cel.StringType)}, cond, cel.BinaryBinding(newCondition))),
		cel.Function("condition", cel.MemberOverload("runtime_condition_dyn_string",
			[]*cel.Type{rt, cel.DynType, cel.StringType}, cond, cel.FunctionBinding(lookupCondition))),
		cel.Macros(parser.NewReceiverMacro("newCondition", 1, newConditionMacro)),
	}
}

// newConditionMacro lets runtime.newCondition take bare keys, as kro's
// does: {type: 'X'} is rewritten to {'type': 'X'} when parsing, and unknown,
// repeated, quoted or missing required keys are syntax errors.
func newConditionMacro(eh parser.ExprHelper, target celast.Expr, args []celast.Expr) (celast.Expr, *common.Error) {
	if target == nil || target.Kind() != celast.IdentKind || target.AsIdent() != varRuntime {
		return nil, nil
	}
	arg := args[0]
	if arg.Kind() != celast.MapKind {
		return nil, eh.NewError(arg.ID(), "runtime.newCondition: argument must be a map literal")
	}
	seen := map[string]bool{}
	var entries []celast.EntryExpr
	for _, e := range arg.AsMap().Entries() {
		me := e.AsMapEntry()
		if me.Key().Kind() != celast.IdentKind {
			return nil, eh.NewError(me.Key().ID(), "runtime.newCondition: keys must be bare identifiers (type, status, reason, message)")
		}
		key := me.Key().AsIdent()
		switch {
		case !isConditionKey(key):
			return nil, eh.NewError(me.Key().ID(), fmt.Sprintf("runtime.newCondition: unknown key %q (allowed: type, status, reason, message)", key))
		case seen[key]:
			return nil, eh.NewError(me.Key().ID(), fmt.Sprintf("runtime.newCondition: duplicate key %q", key))
		}
		seen[key] = true
		entries = append(entries, eh.NewMapEntry(eh.NewLiteral(types.String(key)), me.Value(), false))
	}
	for _, required := range []string{"type", "status"} {
		if !seen[required] {
			return nil, eh.NewError(arg.ID(), fmt.Sprintf("runtime.newCondition: '%s' is required", required))
		}
	}
	return eh.NewMemberCall("newCondition", target, eh.NewMap(entries...)), nil
}

func isConditionKey(k string) bool {
	for _, c := range conditionKeys {
		if c == k {
			return true
		}
	}
	return false
}

// validConditionStatus holds the statuses a condition may have.
var validConditionStatus = map[string]bool{"True": true, "False": true, "Unknown": true}

func newCondition(_, arg ref.Val) ref.Val {
	m, ok := arg.(traits.Mapper)
	if !ok {
		return types.NewErr("runtime.newCondition: argument must be a map, got %s", arg.Type().TypeName())
	}
	out := map[string]string{"type": "", "status": "", "reason": "", "message": ""}
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		v := m.Get(k)
		if types.IsError(v) {
			return v
		}
		s, ok := v.(types.String)
		if !ok {
			return types.NewErr("runtime.newCondition: %v must be a string, got %s", k, v.Type().TypeName())
		}
		out[fmt.Sprint(k)] = string(s)
	}
	switch {
	case out["type"] == "":
		return types.NewErr("runtime.newCondition: type must not be empty")
	case !validConditionStatus[out["status"]]:
		return types.NewErr("runtime.newCondition: status must be one of True, False, Unknown (got %q)", out["status"])
	}
	return types.NewStringStringMap(types.DefaultTypeAdapter, out)
}

// lookupCondition finds obj.status.conditions[type == wanted], or returns
// a condition with every field empty.
func lookupCondition(args ...ref.Val) ref.Val {
	wanted, ok := args[2].(types.String)
	if !ok {
		return types.NewErr("runtime.condition: type must be a string")
	}
	conds, errVal := conditionsOf(args[1])
	if errVal != nil {
		return errVal
	}
	if conds == nil {
		conds = types.NewDynamicList(types.DefaultTypeAdapter, []any{})
	}
	for it := conds.Iterator(); it.HasNext() == types.True; {
		c, ok := it.Next().(traits.Mapper)
		if !ok {
			continue
		}
		if t, _ := c.Find(types.String("type")); t == wanted {
			return conditionOf(c)
		}
	}
	return types.NewStringStringMap(types.DefaultTypeAdapter, map[string]string{"type": "", "status": "", "reason": "", "message": ""})
}

// conditionsOf returns obj.status.conditions; nil when absent.
func conditionsOf(obj ref.Val) (traits.Lister, ref.Val) {
	cur, path := obj, "obj"
	for _, key := range []string{"status", "conditions"} {
		m, ok := cur.(traits.Mapper)
		if !ok {
			return nil, types.NewErr("runtime.condition: %s must be an object", path)
		}
		next, found := m.Find(types.String(key))
		if !found {
			return nil, nil
		}
		cur, path = next, path+"."+key
	}
	l, ok := cur.(traits.Lister)
	if !ok {
		return nil, types.NewErr("runtime.condition: obj.status.conditions must be a list")
	}
	return l, nil
}

func conditionOf(m traits.Mapper) ref.Val {
	out := map[string]string{}
	for _, k := range conditionKeys {
		v, _ := m.Find(types.String(k))
		s, _ := v.(types.String)
		out[k] = string(s)
	}
	return types.NewStringStringMap(types.DefaultTypeAdapter, out)
}

// runtimeValue is the value of the runtime variable: it has no state, only
// the two methods.
type runtimeValue struct{}

var theRuntime ref.Val = runtimeValue{}

func (runtimeValue) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("%s has no native form", runtimeTypeName)
}

func (r runtimeValue) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return types.NewObjectType(runtimeTypeName)
	}
	return types.NewErr("cannot convert %s to %s", runtimeTypeName, t.TypeName())
}

func (runtimeValue) Equal(other ref.Val) ref.Val {
	_, ok := other.(runtimeValue)
	return types.Bool(ok)
}

func (runtimeValue) Type() ref.Type { return types.NewObjectType(runtimeTypeName) }

func (runtimeValue) Value() any { return nil }
