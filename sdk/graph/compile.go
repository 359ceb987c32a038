package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"
	celresolver "k8s.io/apiserver/pkg/cel/openapi/resolver"

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
	c := &compiler{
		ctx:        ctx,
		rgd:        rgd.DeepCopy(),
		opts:       opts.withDefaults(),
		byID:       map[string]*resource{},
		valueNames: map[string]bool{varSchema: true},
		programs:   map[programKey]programResult{},
	}
	return c.run()
}

// compiler holds the state of one Compile call.
type compiler struct {
	ctx  context.Context
	rgd  *v1alpha1.ResourceGraphDefinition
	opts Options
	errs []error
	exts []Extension
	// conditions are spec.schema.status.conditions, compiled.
	conditions []conditionProgram

	specSchema   *apiextensionsv1.JSONSchemaProps
	instanceDecl *apiservercel.DeclType
	resources    []*resource
	byID         map[string]*resource
	// valueNames are the names expressions read from Values: schema and
	// every resource id.
	valueNames map[string]bool
	// formats are the format trees of schema and each resource id (for a
	// collection, of one item).
	formats map[string]*formatTree

	kinds    *typedEnv // base + the child kinds' types (cached across compiles)
	instance *typedEnv // kinds + the instance's types + schema + every resource id
	graphEnv *cel.Env  // instance.env
	// programs dedupes expressions: the same source in the same
	// environment compiles once.
	programs map[programKey]programResult
	// status counts the inferred status schema (compile_limits.go).
	status statusBudget
}

// fail records err; the expression of an *Error is cut to
// Limits.MaxMessageExpression characters, since it goes into conditions,
// events and logs.
func (c *compiler) fail(err error) {
	if e, ok := err.(*Error); ok {
		e.Expression = cutText(e.Expression, c.opts.Limits.MaxMessageExpression)
	}
	c.errs = append(c.errs, err)
}

func (c *compiler) failed() error { return errors.Join(c.errs...) }

func (c *compiler) run() (*Graph, error) {
	c.checkSchemaHeader()
	c.parseInstanceSpec()
	c.parseResources()
	if err := c.failed(); err != nil {
		return nil, err
	}
	c.resolveKinds()
	if err := c.stopped(); err != nil {
		return nil, err
	}
	if err := c.buildEnvs(); err != nil {
		return nil, err
	}
	c.checkIdentities()
	for _, r := range c.resources {
		if err := c.stopped(); err != nil {
			return nil, err
		}
		c.compileResource(r)
	}
	status, statusSchema := c.compileStatus()
	if err := c.failed(); err != nil {
		return nil, err
	}
	if err := c.stopped(); err != nil {
		return nil, err
	}
	crd := c.buildCRD(*c.specSchema, statusSchema)
	if raw, ok := c.checkCRDSize(crd); ok {
		c.checkCRD(crd, raw)
	}
	if err := c.failed(); err != nil {
		return nil, err
	}
	nodes, levels, err := order(c.resources)
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
		Extensions:    c.sortedExtensions(),
		status:        status,
		conditions:    c.conditions,
		byID:          map[string]*Node{},
		source:        c.rgd,
		opts:          c.opts,
	}
	g.Instance = Instance{
		GVK:        schema.GroupVersionKind{Group: c.group(), Version: c.rgd.Spec.Schema.APIVersion, Kind: c.rgd.Spec.Schema.Kind},
		Plural:     g.CRD.Spec.Names.Plural,
		Namespaced: c.namespaced(),
	}
	for _, n := range nodes {
		g.byID[n.ID] = n
	}
	return g, nil
}

// resolveKinds looks up each child kind's schema and CEL type.
func (c *compiler) resolveKinds() {
	for _, r := range c.resources {
		c.valueNames[r.node.ID] = true
		r.decl = apiservercel.DynType
		if c.opts.Resolver == nil || c.ctx.Err() != nil {
			continue
		}
		s, err := c.opts.Resolver.ResolveSchema(r.node.GVK)
		switch {
		case err == nil && s != nil:
			r.schema = s
			gvk := r.node.GVK
			r.decl = cachedDeclType(s, gvkTypeName(gvk.Group, gvk.Version, gvk.Kind))
		case isNotFound(err) && c.opts.DynamicUnknownKinds:
		case isNotFound(err):
			c.fail(&Error{ResourceID: r.node.ID, Path: c.kindPath(r), Err: errorf(ErrSchemaNotFound, "no schema for %s: %v", r.node.GVK, err)})
		default:
			c.fail(&Error{ResourceID: r.node.ID, Path: c.kindPath(r), Err: errorf(ErrSchemaUnavailable, "resolving the schema of %s: %w", r.node.GVK, err)})
		}
	}
}

func (c *compiler) kindPath(r *resource) string {
	if r.node.External {
		return "externalRef.kind"
	}
	return "kind"
}

func isNotFound(err error) bool {
	return errors.Is(err, ErrSchemaNotFound) || errors.Is(err, celresolver.ErrSchemaNotFound)
}

// buildEnvs declares the object types and the variables every expression
// may use.
func (c *compiler) buildEnvs() error {
	var kinds []*apiservercel.DeclType
	seen := map[*apiservercel.DeclType]bool{}
	vars := map[string]*cel.Type{varSchema: c.instanceDecl.CelType()}
	c.formats = map[string]*formatTree{varSchema: formatsOf(c.instanceDecl)}
	for _, r := range c.resources {
		c.formats[r.node.ID] = formatsOf(r.decl)
		if r.decl.IsObject() && !seen[r.decl] {
			seen[r.decl] = true
			kinds = append(kinds, r.decl)
		}
		t := celType(r.decl)
		if r.node.Collection {
			t = cel.ListType(t)
		}
		vars[r.node.ID] = t
	}
	var err error
	if c.kinds, err = kindsEnv(kinds, c.opts.Strict); err != nil {
		return &Error{Err: errorf(ErrExpression, "declaring the child kinds' types: %v", err)}
	}
	if c.instance, err = extendTypes(c.kinds.env, []*apiservercel.DeclType{c.instanceDecl}, variables(vars)...); err != nil {
		return &Error{Err: errorf(ErrExpression, "declaring the instance type and variables: %v", err)}
	}
	c.graphEnv = c.instance.env
	return nil
}

// findDeclType finds an object type by name among the instance's and the
// child kinds'.
func (c *compiler) findDeclType(name string) (*apiservercel.DeclType, bool) {
	if t, ok := c.instance.findDeclType(name); ok && t.IsObject() {
		return t, true
	}
	return c.kinds.findDeclType(name)
}

type programKey struct {
	env *cel.Env
	src string
}

type programResult struct {
	p   *program
	err error
}

// compile compiles src in env once per Compile call; written is how the
// expression appears at this use, in resource resID (empty for
// spec.schema) at path.
func (c *compiler) compile(env *cel.Env, src, written, resID, path string) (*program, error) {
	key := programKey{env, src}
	res, ok := c.programs[key]
	if !ok {
		res.p, res.err = c.compileExpr(env, src, written)
		c.programs[key] = res
	}
	if res.err != nil {
		return nil, res.err
	}
	for _, feature := range res.p.extensions {
		c.extension(resID, path, feature)
	}
	p := *res.p
	p.written = written
	p.formats = formatsFor(p.refs, c.formats)
	return &p, nil
}

// String describes the graph in one line, for logs.
func (g *Graph) String() string {
	return fmt.Sprintf("graph %q (%s, %d resources)", g.Name, g.Instance.GVK, len(g.Nodes))
}
