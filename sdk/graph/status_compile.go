package graph

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

// reservedStatusFields are set by the runtime, not by projections.
// (conditions may hold the RGD's own conditions: see conditions.go.)
var reservedStatusFields = map[string]bool{"state": true}

// statusCompiler compiles spec.schema.status: the projected fields, whose
// schema statusSchema infers from their expressions' types, and the RGD's
// own conditions (conditions.go).
type statusCompiler struct {
	exprs  *exprCompiler
	env    *cel.Env // the graph's
	diag   *diagnostics
	schema *statusSchema

	program    *statusProgram
	conditions []conditionProgram
}

// compiledStatus is what statusCompiler makes of spec.schema.status.
type compiledStatus struct {
	program    *statusProgram
	schema     apiextensionsv1.JSONSchemaProps
	conditions []conditionProgram
}

// compileStatus compiles spec.schema.status (raw) and infers the OpenAPI
// schema of each projected field from its expression's type; spec is the
// instance's spec schema, which the status shares a property limit with.
func compileStatus(raw []byte, spec *apiextensionsv1.JSONSchemaProps, exprs *exprCompiler, limits Limits) compiledStatus {
	sc := &statusCompiler{
		exprs:   exprs,
		env:     exprs.envs.graph,
		diag:    exprs.diag,
		schema:  &statusSchema{envs: exprs.envs, diag: exprs.diag, limit: limits.MaxSchemaProperties},
		program: &statusProgram{},
	}
	s := sc.compile(raw, spec)
	return compiledStatus{program: sc.program, schema: s, conditions: sc.conditions}
}

func (sc *statusCompiler) compile(raw []byte, spec *apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	obj, err := decodeObject(raw)
	if err != nil {
		sc.diag.fail(&Error{Path: "spec.schema.status", Err: errorf(ErrInvalid, "%v", err)})
		return apiextensionsv1.JSONSchemaProps{}
	}
	if conds, ok := obj["conditions"]; ok {
		sc.conditions = sc.compileConditionList(conds)
		delete(obj, "conditions")
	}
	sc.schema.specProps = countProperties(spec)
	out := sc.object(nil, "spec.schema.status", 0, obj)
	sc.dropReserved(obj)
	return out
}

// dropReserved takes the projections of fields the runtime writes
// (status.state) out of the program. As in kro v0.9.4, such a projection
// is compiled and its type is the field's in the CRD, but the runtime's
// value is the one written: a warning says so.
func (sc *statusCompiler) dropReserved(obj map[string]any) {
	leaves := sc.program.leaves[:0]
	for _, l := range sc.program.leaves {
		if l.path.parent == nil && reservedStatusFields[l.path.key] {
			written, _ := obj[l.path.key].(string)
			sc.diag.warn(Warning{Path: "spec.schema.status." + l.path.key, Expression: written,
				Message: fmt.Sprintf("status.%s is written by the runtime (ACTIVE, IN_PROGRESS, ...): this projection is never seen, as in kro", l.path.key)})
			continue
		}
		leaves = append(leaves, l)
	}
	sc.program.leaves = leaves
}

func (sc *statusCompiler) object(path *fieldPath, where string, depth int, obj map[string]any) apiextensionsv1.JSONSchemaProps {
	out := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	if !sc.schema.depthFits(where, depth) || !sc.schema.take(where, len(obj)) {
		return out
	}
	for _, k := range sortedKeys(obj) {
		p := &fieldPath{parent: path, key: k}
		if s, ok := sc.field(p, clipPath(where+"."+k), depth+1, obj[k]); ok {
			out.Properties[k] = s
		}
	}
	return out
}

func (sc *statusCompiler) field(path *fieldPath, where string, depth int, v any) (apiextensionsv1.JSONSchemaProps, bool) {
	sc.schema.where, sc.schema.expr = where, ""
	switch v := v.(type) {
	case map[string]any:
		return sc.object(path, where, depth, v), true
	case string:
		sc.schema.expr = v
		t := sc.templates().value(where, v, nil)
		switch t := t.(type) {
		case *tmplExpr:
			sc.checkReads(where, v, t)
			sc.program.leaves = append(sc.program.leaves, statusLeaf{path: path, t: t})
			return sc.schema.ofType(t.p.out, 0), true
		case *tmplConcat:
			sc.checkReads(where, v, t)
			sc.program.leaves = append(sc.program.leaves, statusLeaf{path: path, t: t})
			return apiextensionsv1.JSONSchemaProps{Type: "string"}, true
		}
		if segs, err := expr.Scan(v); err == nil && !hasExprSegment(segs) {
			sc.diag.fail(&Error{Path: where, Expression: v, Err: errorf(ErrInvalid, "a status field must be a ${} expression")})
		}
		return apiextensionsv1.JSONSchemaProps{}, false
	case []any:
		return sc.list(path, where, v)
	default:
		sc.diag.fail(&Error{Path: where, Err: errorf(ErrInvalid, "a status field must be a ${} expression or an object of them, got %T", v)})
		return apiextensionsv1.JSONSchemaProps{}, false
	}
}

// templates compiles status values: in the graph's environment, with no
// resource to name and no field type to fit.
func (sc *statusCompiler) templates() *templateCompiler {
	return &templateCompiler{exprs: sc.exprs, env: sc.env}
}

// list compiles a list of expressions projected as one field; its items'
// schema is their common type (any value when they differ).
func (sc *statusCompiler) list(path *fieldPath, where string, v []any) (apiextensionsv1.JSONSchemaProps, bool) {
	t, ok := sc.templates().value(where, v, nil).(*tmplList)
	if !ok {
		sc.diag.fail(&Error{Path: where, Err: errorf(ErrInvalid, "a status field must hold ${} expressions")})
		return apiextensionsv1.JSONSchemaProps{}, false
	}
	for i, item := range t.items {
		written, _ := v[i].(string)
		sc.checkReads(fmt.Sprintf("%s[%d]", where, i), written, item)
	}
	sc.program.leaves = append(sc.program.leaves, statusLeaf{path: path, t: t})
	var items *apiextensionsv1.JSONSchemaProps
	for _, item := range t.items {
		s := sc.schema.ofTemplate(item)
		if items != nil && !reflect.DeepEqual(*items, s) {
			items = ptr(anyValue())
			break
		}
		items = &s
	}
	return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}}, true
}

// checkReads refuses, as kro does, a projected status field whose
// expressions read neither schema nor a resource: a constant belongs in
// the CRD, not in every instance's status. Reading the cluster variable
// counts: its value differs from cluster to cluster.
func (sc *statusCompiler) checkReads(where, written string, t tmpl) {
	progs := t.programs(nil)
	if len(progs) == 0 {
		return
	}
	for _, p := range progs {
		if len(p.refs) > 0 || p.cluster != 0 {
			return
		}
	}
	sc.diag.fail(&Error{Path: where, Expression: written, Err: errorf(ErrInvalid, "a status field must read schema or a resource")})
}
