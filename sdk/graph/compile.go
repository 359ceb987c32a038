package graph

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// Compile checks a ResourceGraphDefinition and turns it into a Graph: the
// generated CRD, the resources in dependency order and every expression
// type-checked and planned, so that evaluating the graph never parses or
// compiles CEL.
//
// On failure it returns every problem it found, joined; each is an *Error
// naming the resource, the field path and the expression, and wrapping one
// of this package's sentinel errors. Compile does no I/O except through
// opts.Resolver and does not modify rgd.
//
// What an RGD may make Compile build is bounded by opts.Limits: the schema
// is counted while custom types expand, before anything is copied, and
// the generated CRD is held to the size an API server stores. A refusal
// wraps ErrLimit and names the Limits field.
func Compile(rgd *v1alpha1.ResourceGraphDefinition, opts Options) (*Graph, error) {
	return CompileContext(context.Background(), rgd, opts)
}

// CompileContext is Compile that stops early, between resources, once ctx
// is done. It then returns an error wrapping ctx.Err() (and its cause),
// which is not an *Error: it says nothing about the RGD.
func CompileContext(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, opts Options) (*Graph, error) {
	if rgd == nil {
		return nil, &Error{Err: errorf(ErrInvalid, "nil ResourceGraphDefinition")}
	}
	opts = opts.withDefaults()
	c := &compilation{ctx: ctx, rgd: rgd.DeepCopy(), opts: opts, diag: newDiagnostics(opts)}
	return c.run()
}

// compilation runs the phases of one Compile call in order, and returns
// every error found so far at three checkpoints (after the structure is
// parsed, after the expressions are compiled, after the CRD is checked).
// Each phase is a value of its own, made for this call and handed what it
// needs of the earlier ones; all of them record what they find into one
// diagnostics, so errors come in the order found.
//
//   - instanceKind (instance.go): spec.schema's header, SimpleSchema to
//     OpenAPI and to the CEL type of `schema`; later the CRD (crd.go),
//     its size and the API server's verdict on it (crdcheck.go);
//   - parseResources (resources.go, templatechecks.go): the structure of
//     spec.resources;
//   - resolveKinds (kinds.go): the child kinds' schemas and CEL types;
//   - buildEnvs (env.go): the CEL environments; exprCompiler
//     (program.go, estimate.go, parse.go) compiles each expression once;
//   - identityChecker (identity.go, samename.go): kro's rules on names;
//   - resourceCompiler (resource_compile.go, template.go, typecheck.go):
//     each resource's expressions, fitted to its kind's fields;
//   - compileStatus (status_compile.go, status_schema.go, conditions.go):
//     status projections, their inferred schema, the RGD's conditions;
//   - order (dag.go): the resources in dependency order.
type compilation struct {
	ctx  context.Context
	rgd  *v1alpha1.ResourceGraphDefinition
	opts Options
	diag *diagnostics
}

func (c *compilation) run() (*Graph, error) {
	inst := newInstanceKind(c.rgd, c.opts.Limits, c.diag)
	inst.checkHeader()
	inst.parseSpec()
	resources, byID := parseResources(c.rgd, c.diag)
	checkRGDTarget(c.rgd, c.diag) // target.go
	sound := resources
	if err := c.diag.err(); err != nil {
		if !c.opts.AllErrors {
			return nil, err
		}
		sound = c.diag.sound(resources)
		if inst.decl == nil {
			inst.decl = apiservercel.DynType // spec.schema did not decode
		}
	}
	resolveKinds(c.ctx, c.opts, sound, c.diag)
	if err := c.stopped(); err != nil {
		return nil, err
	}
	envs, err := buildEnvs(inst.decl, resources, c.opts.Strict)
	if err != nil {
		return nil, err
	}
	exprs := newExprCompiler(envs, valueNames(resources), costCheck{spec: inst.spec, limits: c.opts.Limits}, c.diag)
	c.checkIdentities(inst, sound, envs)
	status, err := c.compileExpressions(exprs, sound, byID, inst.spec)
	if err != nil {
		if fe := fleetMisuse(exprs, resources); fe != nil && c.opts.AllErrors && c.ctx.Err() == nil {
			c.diag.fail(fe)
			err = c.diag.err()
		}
		return nil, err
	}
	crd := inst.buildCRD(*inst.spec, status.schema)
	if raw, ok := inst.checkCRDSize(crd); ok {
		inst.checkCRD(crd, raw)
	}
	if err := c.diag.err(); err != nil {
		return nil, err
	}
	g, err := c.graph(inst, resources, crd, status)
	if err != nil {
		return nil, err
	}
	g.clusterUse = exprs.cluster
	g.usesFleet = exprs.fleet
	if err := fleetMisuse(exprs, resources); err != nil {
		return nil, err
	}
	return g, nil
}

// fleetMisuse refuses a graph that reads the fleet variable without being
// a hub graph (no resource has a target), at the first expression that
// reads it.
func fleetMisuse(exprs *exprCompiler, resources []*resource) *Error {
	if !exprs.fleet || slices.ContainsFunc(resources, func(r *resource) bool { return r.node.target != nil }) {
		return nil
	}
	at := exprs.fleetAt
	return &Error{ResourceID: at.ResourceID, Path: at.Path, Expression: at.Expression,
		Err: errorf(ErrInvalid, "the fleet variable is read only by hub graphs (a graph with a target)")}
}

// checkIdentities applies kro's rules on the objects' names.
func (c *compilation) checkIdentities(inst *instanceKind, resources []*resource, envs *celEnvs) {
	scopes, _ := c.opts.Resolver.(ScopeResolver)
	ic := &identityChecker{
		name: c.rgd.Name, rgd: c.rgd, resources: resources, scopes: scopes,
		namespaced: inst.namespaced(), env: envs.graph, diag: c.diag,
		refuseSameObjects: c.opts.RefuseSameObjects,
	}
	ic.check()
}

// compileExpressions compiles every resource's expressions, then the
// status's, stopping between resources once the context is done.
func (c *compilation) compileExpressions(exprs *exprCompiler, resources []*resource, byID map[string]*resource, spec *apiextensionsv1.JSONSchemaProps) (compiledStatus, error) {
	rc := newResourceCompiler(exprs, resources, byID, c.opts.Limits)
	rc.rgd = c.rgd
	for _, r := range resources {
		if err := c.stopped(); err != nil {
			return compiledStatus{}, err
		}
		rc.compile(r)
	}
	status := compileStatus(c.rgd.Spec.Schema.Status.Raw, spec, exprs, c.opts.Limits)
	if err := c.diag.err(); err != nil {
		return compiledStatus{}, err
	}
	return status, c.stopped()
}

// graph orders the compiled resources and assembles the Graph.
func (c *compilation) graph(inst *instanceKind, resources []*resource, crd *apiextensionsv1.CustomResourceDefinition, status compiledStatus) (*Graph, error) {
	nodes, levels, err := order(resources)
	if err != nil {
		return nil, err
	}
	g := &Graph{
		Name:          c.rgd.Name,
		Generation:    c.rgd.Generation,
		CRD:           crd,
		Nodes:         nodes,
		Levels:        levels,
		DeletionWaves: reversed(levels),
		Extensions:    c.diag.extensions(),
		Warnings:      c.diag.warnings(),
		status:        status.program,
		conditions:    status.conditions,
		byID:          map[string]*Node{},
		source:        c.rgd,
		opts:          c.opts,
	}
	g.Instance = Instance{
		GVK:        schema.GroupVersionKind{Group: inst.group(), Version: c.rgd.Spec.Schema.APIVersion, Kind: c.rgd.Spec.Schema.Kind},
		Plural:     g.CRD.Spec.Names.Plural,
		Namespaced: inst.namespaced(),
	}
	for _, n := range nodes {
		g.byID[n.ID] = n
	}
	return g, nil
}

// stopped returns an error once the compile's context is done.
func (c *compilation) stopped() error {
	if c.ctx.Err() == nil {
		return nil
	}
	if cause := context.Cause(c.ctx); cause != c.ctx.Err() {
		return fmt.Errorf("compiling %q stopped: %w: %w", c.rgd.Name, c.ctx.Err(), cause)
	}
	return fmt.Errorf("compiling %q stopped: %w", c.rgd.Name, c.ctx.Err())
}
