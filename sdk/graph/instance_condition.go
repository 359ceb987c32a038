package graph

import (
	"context"
	"maps"

	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/openapi"

	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

// VarInstance is the variable an InstanceCondition reads: one instance of
// the graph.
const VarInstance = "instance"

// instanceConditionPath is where an InstanceCondition is written, for
// errors.
const instanceConditionPath = "spec.health.instanceCondition"

// InstanceCondition is a boolean CEL expression over one instance of a
// graph, compiled against the graph's instance kind. A GraphRollout's
// health gate asks it of each instance (spec.health.instanceCondition).
// It is safe for concurrent use.
type InstanceCondition struct {
	p   *program
	lim Limits
}

// CompileInstanceCondition type-checks src, a CEL expression (bare, or
// one ${...}), against g's instance kind as the variable `instance`:
// apiVersion, kind, metadata, spec and status as the generated CRD types
// them, so a misspelt field is refused here rather than found false at
// run time. It must give a bool. It may use every function a graph's
// expressions may (kro's and fleetgraph's libraries), and is priced
// against Limits.MaxExpressionEstimatedCost when that is set. Errors are *Error values
// wrapping ErrExpression, ErrType or ErrLimit, naming the expression
// (truncated to Limits.MaxMessageExpression).
func (g *Graph) CompileInstanceCondition(src string) (*InstanceCondition, error) {
	written := src
	if inner, ok, err := expr.Standalone(src); err == nil && ok {
		src = inner
	}
	fail := func(err error) error {
		return &Error{Path: instanceConditionPath, Expression: written, Err: err, maxExpression: g.opts.Limits.MaxMessageExpression}
	}
	decl := g.instanceDecl()
	base, err := fullEnv()
	if err != nil {
		return nil, fail(errorf(ErrExpression, "%v", err))
	}
	te, err := extendTypes(base, []*apiservercel.DeclType{decl}, cel.Variable(VarInstance, decl.CelType()))
	if err != nil {
		return nil, fail(errorf(ErrExpression, "declaring the instance type: %v", err))
	}
	p, err := compileExpr(te.env, src, written, map[string]bool{VarInstance: true}, false, costCheck{limits: g.opts.Limits})
	if err != nil {
		return nil, fail(err)
	}
	if !isBool(p.out) && !isDyn(p.out) {
		return nil, fail(errorf(ErrType, "want a bool, got %s", typeName(p.out)))
	}
	p.formats = formatsFor(p.refs, map[string]*formatTree{VarInstance: formatsOf(decl)})
	return &InstanceCondition{p: p, lim: g.opts.Limits}, nil
}

// Eval reports whether the condition holds for instance (the object's
// unstructured content). It is bounded like every evaluation of the
// graph: Limits.ExpressionCost and ExpressionTimeout, and the Budget ctx
// carries (WithBudget), so a caller that evaluates many instances bounds
// them together with one Budget. A field the instance does not have yet
// gives an error wrapping ErrPending; a bound, one wrapping ErrLimit.
func (c *InstanceCondition) Eval(ctx context.Context, instance map[string]any) (bool, error) {
	sc := newScope(ctx, &c.lim, Values{VarInstance: instance}, nil, "")
	defer sc.done()
	return sc.evalBool(c.p, instanceConditionPath)
}

// instanceDecl is the CEL type of a whole instance: the generated CRD's
// schema, with the typed metadata expressions see on schema.
func (g *Graph) instanceDecl() *apiservercel.DeclType {
	var root apiextensionsv1.JSONSchemaProps
	if g.CRD != nil && len(g.CRD.Spec.Versions) > 0 && g.CRD.Spec.Versions[0].Schema != nil && g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema != nil {
		root = *g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.DeepCopy()
	}
	root.Type = "object"
	root.Properties = maps.Clone(root.Properties)
	if root.Properties == nil {
		root.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	root.Properties["apiVersion"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	root.Properties["kind"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	root.Properties["metadata"] = instanceMetaSchema(g.Instance.Namespaced)
	s, err := toSpecSchema(&root)
	if err != nil {
		return apiservercel.DynType
	}
	return declTypeOf(&openapi.Schema{Schema: s}, typeNamePrefix+"instance", 0)
}
