package graph

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

// tmpl is a compiled piece of a template (or of a status projection or an
// externalRef): evaluated against a scope, it yields a JSON value, or
// nothing when an optional expression is empty.
type tmpl interface {
	eval(sc *scope) (v any, present bool, err error)
	// programs appends every expression in this piece.
	programs(out []*program) []*program
}

// tmplLiteral is a subtree without expressions; it is copied on each use so
// that callers may modify what they get.
type tmplLiteral struct{ v any }

func (t tmplLiteral) eval(sc *scope) (any, bool, error) {
	v, err := copyJSON(t.v, sc.sizer)
	return v, err == nil, err
}
func (tmplLiteral) programs(out []*program) []*program { return out }

type tmplObject struct {
	keys []string
	vals []tmpl
}

func (t *tmplObject) eval(sc *scope) (any, bool, error) {
	out := make(map[string]any, len(t.keys))
	for i, k := range t.keys {
		v, ok, err := t.vals[i].eval(sc)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out[k] = v
		}
	}
	return out, true, nil
}

func (t *tmplObject) programs(out []*program) []*program {
	for _, v := range t.vals {
		out = v.programs(out)
	}
	return out
}

type tmplList struct{ items []tmpl }

func (t *tmplList) eval(sc *scope) (any, bool, error) {
	out := make([]any, 0, len(t.items))
	for _, item := range t.items {
		v, ok, err := item.eval(sc)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out = append(out, v)
		}
	}
	return out, true, nil
}

func (t *tmplList) programs(out []*program) []*program {
	for _, v := range t.items {
		out = v.programs(out)
	}
	return out
}

// tmplExpr is a value that is exactly one expression: it keeps the
// expression's type.
type tmplExpr struct {
	p    *program
	path string
}

func (t *tmplExpr) eval(sc *scope) (any, bool, error) {
	return sc.evalJSON(t.p, t.path)
}

func (t *tmplExpr) programs(out []*program) []*program { return append(out, t.p) }

// tmplConcat is a string mixing text and expressions that return strings.
type tmplConcat struct {
	parts   []tmplPart
	path    string
	written string
}

type tmplPart struct {
	text string
	p    *program // nil for text
}

func (t *tmplConcat) eval(sc *scope) (any, bool, error) {
	var b strings.Builder
	for _, part := range t.parts {
		if part.p == nil {
			b.WriteString(part.text)
			continue
		}
		v, ok, err := sc.evalJSON(part.p, t.path)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			continue
		}
		s, isString := v.(string)
		if !isString {
			return nil, false, sc.wrap(t.path, part.p.written, errorf(ErrEvaluation, "want a string, got %T", v))
		}
		b.WriteString(s)
	}
	return b.String(), true, nil
}

func (t *tmplConcat) programs(out []*program) []*program {
	for _, part := range t.parts {
		if part.p != nil {
			out = append(out, part.p)
		}
	}
	return out
}

// templateCompiler compiles the values of one resource's template (or
// status, or externalRef) in one environment.
type templateCompiler struct {
	exprs      *exprCompiler
	env        *cel.Env
	resourceID string
	// check, if set, is called with every standalone expression and the CEL
	// type expected at its path (nil when unknown).
	check func(path string, p *program, want *apiservercel.DeclType) error
}

// value compiles v found at path, where the schema expects want (nil when
// unknown).
func (tc *templateCompiler) value(path string, v any, want *apiservercel.DeclType) tmpl {
	if s, ok := v.(string); ok && expr.HasExpr(s) {
		return tc.str(path, s, want)
	}
	if tc.check != nil && !literalFits(want, v) {
		tc.fail(path, "", errorf(ErrType, "%s does not fit a field of type %s", describeLiteral(v), typeName(want.CelType())))
		return tmplLiteral{v}
	}
	switch v := v.(type) {
	case map[string]any:
		return tc.object(path, v, want)
	case []any:
		return tc.list(path, v, want)
	}
	return tmplLiteral{v}
}

func (tc *templateCompiler) object(path string, obj map[string]any, want *apiservercel.DeclType) tmpl {
	keys := sortedKeys(obj)
	out := &tmplObject{keys: keys}
	dynamic := false
	for _, k := range keys {
		if isClosed(want) && want.Fields[k] == nil {
			tc.fail(joinPath(path, k), "", errorf(ErrInvalid, "unknown field %q: the kind's schema has no such field", k))
			continue
		}
		child := tc.value(joinPath(path, k), obj[k], fieldType(want, k))
		_, isLit := child.(tmplLiteral)
		dynamic = dynamic || !isLit
		out.vals = append(out.vals, child)
	}
	if !dynamic {
		return tmplLiteral{obj}
	}
	return out
}

func (tc *templateCompiler) list(path string, items []any, want *apiservercel.DeclType) tmpl {
	out := &tmplList{}
	dynamic := false
	for i, item := range items {
		child := tc.value(clipPath(path+"["+strconv.Itoa(i)+"]"), item, elemType(want))
		_, isLit := child.(tmplLiteral)
		dynamic = dynamic || !isLit
		out.items = append(out.items, child)
	}
	if !dynamic {
		return tmplLiteral{items}
	}
	return out
}

// str compiles a string holding at least one "${". As in kro v0.9.4, a
// "${" that nothing closes is text; it is reported in Graph.Warnings.
func (tc *templateCompiler) str(path, s string, want *apiservercel.DeclType) tmpl {
	segs, err := expr.Scan(s)
	if err != nil {
		tc.fail(path, s, errorf(ErrExpression, "%v", err))
		return tmplLiteral{s}
	}
	if expr.Unterminated(s) {
		tc.exprs.diag.warn(Warning{ResourceID: tc.resourceID, Path: path, Expression: s,
			Message: `a "${" that no "}" closes is written as text, as kro v0.9.4 does (kro v0.10 refuses it): close it, or drop the "${"`})
	}
	if !hasExprSegment(segs) {
		if tc.check != nil && !literalFits(want, s) {
			tc.fail(path, s, errorf(ErrType, "%s does not fit a field of type %s", describeLiteral(s), typeName(want.CelType())))
		}
		return tmplLiteral{s}
	}
	if len(segs) == 1 && segs[0].Expr {
		p := tc.compile(path, segs[0].Text, s)
		if p == nil {
			return tmplLiteral{s}
		}
		if tc.check != nil {
			if err := tc.check(path, p, want); err != nil {
				tc.fail(path, s, err)
			}
		}
		return &tmplExpr{p: p, path: path}
	}
	out := &tmplConcat{path: path, written: s}
	for _, seg := range segs {
		if !seg.Expr {
			out.parts = append(out.parts, tmplPart{text: seg.Text})
			continue
		}
		written := "${" + seg.Text + "}"
		p := tc.compile(path, seg.Text, written)
		if p == nil {
			continue
		}
		if !isStringish(p.out) {
			tc.fail(path, written, errorf(ErrType, "an expression inside a longer string must return a string, got %s; wrap it in string()", typeName(p.out)))
		} else if isOptional(p.out) {
			// kro type-checks the template as one concatenation, where
			// string + optional has no overload; fleetgraph writes the
			// optional's value, or nothing when it has none.
			tc.exprs.diag.extension(tc.resourceID, path, "an optional value inside a longer string")
		}
		out.parts = append(out.parts, tmplPart{p: p})
	}
	if want != nil && !assignable(want, cel.StringType) {
		tc.fail(path, s, errorf(ErrType, "a string does not fit a field of type %s", typeName(want.CelType())))
	}
	return out
}

func (tc *templateCompiler) compile(path, src, written string) *program {
	p, err := tc.exprs.compile(tc.env, src, written, tc.resourceID, path)
	if err != nil {
		tc.fail(path, written, err)
		return nil
	}
	return p
}

func (tc *templateCompiler) fail(path, written string, err error) {
	tc.exprs.diag.fail(&Error{ResourceID: tc.resourceID, Path: path, Expression: written, Err: err})
}

// isStringish reports whether t may be a string at run time.
func isStringish(t *cel.Type) bool {
	switch unwrapOptional(t).Kind() {
	case types.StringKind, types.DynKind, types.AnyKind:
		return true
	}
	return false
}

// hasExprSegment reports whether segs hold an expression.
func hasExprSegment(segs []expr.Segment) bool {
	for _, seg := range segs {
		if seg.Expr {
			return true
		}
	}
	return false
}

// isOptional reports whether t is optional_type(T).
func isOptional(t *cel.Type) bool {
	return t != nil && t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type"
}

// unwrapOptional returns T for optional_type(T), else t.
func unwrapOptional(t *cel.Type) *cel.Type {
	if t == nil {
		return cel.DynType
	}
	if t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type" && len(t.Parameters()) == 1 {
		return t.Parameters()[0]
	}
	return t
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	if !isCELIdent(strings.ReplaceAll(key, "-", "_")) {
		return clipPath(fmt.Sprintf("%s[%q]", path, key))
	}
	return clipPath(path + "." + key)
}

// fieldType returns the declared type of field k of an object type, nil if
// unknown.
func fieldType(t *apiservercel.DeclType, k string) *apiservercel.DeclType {
	if t == nil {
		return nil
	}
	if t.IsObject() {
		if f, ok := t.Fields[k]; ok {
			return f.Type
		}
		return nil
	}
	if t.IsMap() {
		return t.ElemType
	}
	return nil
}

func elemType(t *apiservercel.DeclType) *apiservercel.DeclType {
	if t != nil && t.IsList() {
		return t.ElemType
	}
	return nil
}

// maxPathLen bounds a field path in an error; longer ones keep their start
// and end around "…". Paths are built level by level, so without a bound
// a deep tree of long keys would cost the square of its depth.
const maxPathLen = 256

func clipPath(p string) string {
	if len(p) <= maxPathLen {
		return p
	}
	return strings.ToValidUTF8(p[:maxPathLen/2-1]+"…"+p[len(p)-maxPathLen/2+2:], "")
}
