package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

// builtinConditions are the condition types kro's runtime writes, the only
// ones runtime.condition(schema, 'X') may name with a literal.
var builtinConditions = map[string]bool{"InstanceManaged": true, "GraphResolved": true, "ResourcesReady": true, "Ready": true}

// conditionProgram is one spec.schema.status.conditions entry.
type conditionProgram struct {
	p    *program
	path string
}

// compileConditionList compiles spec.schema.status.conditions: a list of
// single ${} expressions, each returning a condition or a list of them
// (built with runtime.newCondition), as kro defines it.
func (sc *statusCompiler) compileConditionList(raw any) []conditionProgram {
	const where = "spec.schema.status.conditions"
	entries, ok := raw.([]any)
	if !ok {
		sc.diag.fail(&Error{Path: where, Err: errorf(ErrInvalid, "must be a list of ${} expressions, got %T", raw)})
		return nil
	}
	env, err := sc.env.Extend(cel.Variable(varRuntime, cel.ObjectType(runtimeTypeName)))
	if err != nil {
		sc.diag.fail(&Error{Path: where, Err: errorf(ErrExpression, "%v", err)})
		return nil
	}
	var out []conditionProgram
	var checked []conditionEntry
	for i, e := range entries {
		path := fmt.Sprintf("%s[%d]", where, i)
		written, isString := e.(string)
		if !isString {
			sc.diag.fail(&Error{Path: path, Err: errorf(ErrExpression, "must be a single ${} expression, got %s", describeLiteral(e))})
			continue
		}
		src, ok, err := expr.Standalone(written)
		if err != nil || !ok {
			sc.diag.fail(&Error{Path: path, Expression: written, Err: errorf(ErrExpression, "must be a single ${} expression")})
			continue
		}
		p, err := sc.exprs.compile(env, src, written, "", path)
		if err != nil {
			sc.diag.fail(&Error{Path: path, Expression: written, Err: err})
			continue
		}
		if !isConditionType(p.out) {
			sc.diag.fail(&Error{Path: path, Expression: written, Err: errorf(ErrType, "must return a condition (runtime.newCondition) or a list of them, got %s", typeName(p.out))})
			continue
		}
		out = append(out, conditionProgram{p: p, path: path})
		checked = append(checked, conditionEntry{path: path, written: written, src: src})
	}
	for _, err := range checkConditionLiterals(env, checked) {
		sc.diag.fail(err)
	}
	return out
}

// conditionEntry is one compiled entry of status.conditions.
type conditionEntry struct {
	path, written, src string
}

func isConditionType(t *cel.Type) bool {
	if t.Kind() == types.ListKind {
		t = t.Parameters()[0]
	}
	return t.TypeName() == conditionTypeName
}

// checkConditionLiterals applies kro's rules to literal values: no two
// entries declare the same type; a literal status is True, False or
// Unknown and a literal type is not empty; runtime.condition(schema, 'X')
// names one of kro's own condition types, never one the RGD declares.
// Each error names its entry and expression.
func checkConditionLiterals(env *cel.Env, entries []conditionEntry) []error {
	roots := make([]celast.Expr, len(entries))
	declared := map[string]string{} // type -> path of the entry declaring it
	var errs []error
	for i, e := range entries {
		ast, iss := env.Parse(e.src)
		if iss.Err() != nil {
			continue
		}
		roots[i] = ast.NativeRep().Expr()
		for _, t := range sortedKeys(literalConditionTypes(roots[i])) {
			if first, dup := declared[t]; dup {
				errs = append(errs, &Error{Path: e.path, Expression: e.written, Err: errorf(ErrInvalid, "condition type %q is declared by more than one conditions entry (%s too)", t, first)})
				continue
			}
			declared[t] = e.path
		}
	}
	for i, root := range roots {
		if root == nil {
			continue
		}
		celast.PreOrderVisit(root, celast.NewExprVisitor(func(e celast.Expr) {
			if err := checkRuntimeCall(e, declared); err != nil {
				errs = append(errs, &Error{Path: entries[i].path, Expression: entries[i].written, Err: errorf(ErrInvalid, "%v", err)})
			}
		}))
	}
	return errs
}

func literalConditionTypes(root celast.Expr) map[string]bool {
	out := map[string]bool{}
	celast.PreOrderVisit(root, celast.NewExprVisitor(func(e celast.Expr) {
		if isRuntimeCall(e, "newCondition", 1) {
			if t, ok := mapLiteralString(e.AsCall().Args()[0], "type"); ok {
				out[t] = true
			}
		}
	}))
	return out
}

func checkRuntimeCall(e celast.Expr, declared map[string]string) error {
	switch {
	case isRuntimeCall(e, "newCondition", 1):
		arg := e.AsCall().Args()[0]
		if s, ok := mapLiteralString(arg, "status"); ok && !validConditionStatus[s] {
			return fmt.Errorf("runtime.newCondition: status must be one of True, False, Unknown (got %q)", s)
		}
		if t, ok := mapLiteralString(arg, "type"); ok && t == "" {
			return fmt.Errorf("runtime.newCondition: type must not be empty")
		}
	case isRuntimeCall(e, "condition", 2):
		args := e.AsCall().Args()
		t, ok := stringLiteral(args[1])
		if args[0].Kind() != celast.IdentKind || args[0].AsIdent() != varSchema || !ok || builtinConditions[t] {
			return nil
		}
		if _, own := declared[t]; own {
			return fmt.Errorf("runtime.condition(schema, %q): custom conditions cannot reference each other", t)
		}
		return fmt.Errorf("runtime.condition(schema, %q): unknown condition type; only InstanceManaged, GraphResolved, ResourcesReady and Ready can be read from schema", t)
	}
	return nil
}

func isRuntimeCall(e celast.Expr, method string, args int) bool {
	if e.Kind() != celast.CallKind {
		return false
	}
	call := e.AsCall()
	target := call.Target()
	return call.IsMemberFunction() && call.FunctionName() == method && len(call.Args()) == args &&
		target.Kind() == celast.IdentKind && target.AsIdent() == varRuntime
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().Value().(string)
	return s, ok
}

func mapLiteralString(e celast.Expr, key string) (string, bool) {
	if e.Kind() != celast.MapKind {
		return "", false
	}
	for _, entry := range e.AsMap().Entries() {
		me := entry.AsMapEntry()
		if k, ok := stringLiteral(me.Key()); ok && k == key {
			return stringLiteral(me.Value())
		}
	}
	return "", false
}

// Conditions evaluates spec.schema.status.conditions, flattening lists,
// in order. An entry whose inputs are not all observed is left out, and
// incomplete says so (kro then keeps the conditions shown before for the
// types left out); the errors of the others (including two conditions of
// one type) are joined and returned with the conditions that did evaluate.
// Each condition has the keys type, status, reason and message. With no
// conditions block it returns nil, false, nil: the runtime's own
// conditions stand.
func (g *Graph) Conditions(ctx context.Context, vals Values) (conds []map[string]any, incomplete bool, err error) {
	if len(g.conditions) == 0 {
		return nil, false, nil
	}
	sc := newScope(ctx, &g.opts.Limits, vals, map[string]any{varRuntime: theRuntime}, "")
	defer sc.done()
	sc.bound(newSizer("the status conditions", "MaxStatusBytes", g.opts.Limits.MaxStatusBytes))
	out := []map[string]any{}
	seen := map[any]bool{}
	var errs []error
	for _, cp := range g.conditions {
		v, _, err := sc.evalJSON(cp.p, cp.path)
		switch {
		case errors.Is(err, ErrPending):
			incomplete = true
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		for _, cond := range flattenConditions(v) {
			if seen[cond["type"]] {
				errs = append(errs, sc.wrap(cp.path, cp.p.written, errorf(ErrEvaluation, "condition type %q is produced twice", cond["type"])))
				continue
			}
			seen[cond["type"]] = true
			out = append(out, cond)
		}
	}
	return out, incomplete, errors.Join(errs...)
}

// HasConditions reports whether the RGD declares its own status
// conditions; when it does, only those belong on the instance (kro's
// built-in ones stay internal, readable with runtime.condition).
func (g *Graph) HasConditions() bool { return len(g.conditions) > 0 }

func flattenConditions(v any) []map[string]any {
	switch v := v.(type) {
	case map[string]any:
		return []map[string]any{v}
	case []any:
		var out []map[string]any
		for _, item := range v {
			out = append(out, flattenConditions(item)...)
		}
		return out
	}
	return nil
}
