package graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/util/sets"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

// resourceCompiler compiles the expressions of each resource (forEach,
// template or externalRef, includeWhen, readyWhen) into its node program,
// and records what each resource depends on.
type resourceCompiler struct {
	exprs *exprCompiler
	envs  *celEnvs
	diag  *diagnostics
	fit   fitChecker
	// resources are every valid one, in order and by id.
	resources []*resource
	byID      map[string]*resource
	limits    Limits
	// rgd is the RGD compiled, for its default target (target.go).
	rgd *v1alpha1.ResourceGraphDefinition
}

func newResourceCompiler(exprs *exprCompiler, resources []*resource, byID map[string]*resource, limits Limits) *resourceCompiler {
	return &resourceCompiler{
		exprs: exprs, envs: exprs.envs, diag: exprs.diag, fit: fitChecker{envs: exprs.envs},
		resources: resources, byID: byID, limits: limits,
	}
}

// compile compiles every expression of r into its node program.
func (c *resourceCompiler) compile(r *resource) {
	np := &nodeProgram{id: r.node.ID, collection: r.node.Collection, formats: formatsOf(r.decl), limits: c.limits}
	r.node.program = np
	env := c.compileIterators(r, np)
	if env == nil {
		return
	}
	tc := &templateCompiler{exprs: c.exprs, env: env, resourceID: r.node.ID, check: c.checkField}
	if r.src.ExternalRef != nil {
		np.extRef = compileExternalRef(r, tc)
	} else {
		np.template = tc.object("", r.template, r.decl)
	}
	np.include = c.compileConditions(r, "includeWhen", r.src.IncludeWhen, c.envs.graph)
	if readyEnv := c.readyEnv(r); readyEnv != nil {
		np.readyWhen = c.compileConditions(r, "readyWhen", r.src.ReadyWhen, readyEnv)
	}
	c.compileTarget(c.rgd, r, env)
	collectDeps(r, np)
}

// compileIterators compiles forEach and returns the environment of the
// resource's template: the graph's plus the iterators.
func (c *resourceCompiler) compileIterators(r *resource, np *nodeProgram) *cel.Env {
	if len(r.iterators) == 0 {
		return c.envs.graph
	}
	vars := map[string]*cel.Type{}
	for _, it := range r.iterators {
		p, err := c.exprs.compile(c.envs.graph, it.src, it.written, r.node.ID, it.path)
		if err != nil {
			c.diag.fail(&Error{ResourceID: r.node.ID, Path: it.path, Expression: it.written, Err: err})
			vars[it.name] = cel.DynType
			continue
		}
		elem, ok := isList(p.out)
		if !ok {
			c.diag.fail(&Error{ResourceID: r.node.ID, Path: it.path, Expression: it.written, Err: errorf(ErrType, "forEach needs a list, got %s", typeName(p.out))})
			elem = cel.DynType
		}
		vars[it.name] = elem
		np.iterators = append(np.iterators, iteratorProgram{name: it.name, p: p, path: it.path, formats: c.envs.formatsOfType(elem, 0)})
	}
	env, err := withVariables(c.envs.graph, vars)
	if err != nil {
		c.diag.fail(&Error{ResourceID: r.node.ID, Path: "forEach", Err: errorf(ErrExpression, "%v", err)})
		return nil
	}
	return env
}

// compileExternalRef compiles an externalRef's name, namespace and
// selector.
func compileExternalRef(r *resource, tc *templateCompiler) *refProgram {
	md := r.src.ExternalRef.Metadata
	rp := &refProgram{gvk: r.node.GVK}
	if strings.TrimSpace(md.Name) != "" {
		rp.name = tc.value("externalRef.metadata.name", md.Name, apiservercel.StringType)
	}
	if md.Namespace != "" {
		rp.namespace = tc.value("externalRef.metadata.namespace", md.Namespace, apiservercel.StringType)
	}
	if r.selector != nil {
		rp.selector = tc.value("externalRef.metadata.selector", r.selector, selectorType(r.selector))
	}
	return rp
}

// The types kro v0.9.4 expects of a label selector's parts, lenient where
// it is (matchExpressions' items are checked when the selector is used).
var (
	selectorMapType    = apiservercel.NewMapType(apiservercel.StringType, apiservercel.DynType, -1)
	selectorLabelsType = apiservercel.NewMapType(apiservercel.StringType, apiservercel.StringType, -1)
	selectorObjectType = apiservercel.NewObjectType("LabelSelector", map[string]*apiservercel.DeclField{
		"matchLabels":      apiservercel.NewDeclField("matchLabels", selectorLabelsType, false, nil, nil),
		"matchExpressions": apiservercel.NewDeclField("matchExpressions", apiservercel.NewListType(apiservercel.DynType, -1), false, nil, nil),
	})
)

// selectorType is the type a selector written as sel must have: a map
// for one expression, else an object of matchLabels and matchExpressions.
func selectorType(sel any) *apiservercel.DeclType {
	if _, ok := sel.(string); ok {
		return selectorMapType
	}
	return selectorObjectType
}

// compileConditions compiles includeWhen or readyWhen entries: each a
// single ${} expression (or, as kro once allowed, a bare CEL expression)
// returning a bool.
func (c *resourceCompiler) compileConditions(r *resource, field string, entries []string, env *cel.Env) []condition {
	var out []condition
	for i, written := range entries {
		path := fmt.Sprintf("%s[%d]", field, i)
		fail := func(err error) {
			c.diag.fail(&Error{ResourceID: r.node.ID, Path: path, Expression: written, Err: err})
		}
		src, err := conditionSource(written)
		if err != nil {
			fail(err)
			continue
		}
		if !expr.HasExpr(written) {
			c.diag.extension(r.node.ID, path, "condition without ${}")
		}
		if field == "readyWhen" && !c.checkReadyRefs(r, env, src, fail) {
			continue
		}
		if field == "readyWhen" && r.node.External && r.node.Collection && slices.Contains(parsedIdentifiers(env, src), varEach) {
			// kro refuses each here, and its controller binds nothing else.
			c.diag.extension(r.node.ID, path, "each in the readyWhen of an externalRef by selector")
		}
		p, err := c.exprs.compile(env, src, written, r.node.ID, path)
		if err != nil {
			fail(err)
			continue
		}
		if !c.isCondition(r, field, p) {
			fail(errorf(ErrType, "must return a bool, got %s", typeName(p.out)))
			continue
		}
		out = append(out, condition{p: p, path: path})
	}
	return out
}

// isCondition reports whether p may serve as a condition: like kro, it
// must return bool or optional(bool). A dyn result is allowed only when it
// comes from a resource read without a schema (no resolver, or an unknown
// kind with DynamicUnknownKinds), which kro never does.
func (c *resourceCompiler) isCondition(r *resource, field string, p *program) bool {
	t := unwrapOptional(p.out)
	if t.Kind() == types.BoolKind {
		return true
	}
	if !isDyn(t) {
		return false
	}
	if field == "readyWhen" && !r.decl.IsObject() {
		return true
	}
	for _, id := range p.refs {
		if res, ok := c.byID[id]; ok && !res.decl.IsObject() {
			return true
		}
	}
	return false
}

func conditionSource(written string) (string, error) {
	if !expr.HasExpr(written) {
		return written, nil
	}
	src, ok, err := expr.Standalone(written)
	if err != nil {
		return "", errorf(ErrExpression, "%v", err)
	}
	if !ok {
		return "", errorf(ErrExpression, "must be a single ${} expression")
	}
	return src, nil
}

// readyEnv is the environment of r's readyWhen, in which r's id is one
// observed object (and so is each, for a collection). For a plain resource
// that is the graph's environment (checkReadyRefs keeps other names out);
// a collection needs its own, since elsewhere its id is a list.
func (c *resourceCompiler) readyEnv(r *resource) *cel.Env {
	if len(r.src.ReadyWhen) == 0 {
		return nil
	}
	if !r.node.Collection {
		return c.envs.graph
	}
	vars := map[string]*cel.Type{r.node.ID: celType(r.decl), varEach: celType(r.decl)}
	if c.envs.cluster {
		vars[VarCluster] = clusterDecl.CelType()
	}
	env, err := withVariables(c.envs.kinds.env, vars)
	if err != nil {
		c.diag.fail(&Error{ResourceID: r.node.ID, Path: "readyWhen", Err: errorf(ErrExpression, "%v", err)})
		return nil
	}
	return env
}

func (c *resourceCompiler) checkReadyRefs(r *resource, env *cel.Env, src string, fail func(error)) bool {
	allowed := fmt.Sprintf("%q", r.node.ID)
	if r.node.Collection {
		// As in kro, a collection's readyWhen reads each item as each.
		allowed = "each"
	}
	for _, id := range parsedIdentifiers(env, src) {
		if (id != r.node.ID || r.node.Collection) && (c.exprs.valueNames[id] || c.isIteratorName(id)) {
			fail(errorf(ErrReference, "readyWhen may only reference %s, not %q", allowed, id))
			return false
		}
	}
	return true
}

func (c *resourceCompiler) isIteratorName(name string) bool {
	for _, r := range c.resources {
		for _, it := range r.iterators {
			if it.name == name {
				return true
			}
		}
	}
	return false
}

// checkField checks that a standalone expression's type fits its field.
func (c *resourceCompiler) checkField(path string, p *program, want *apiservercel.DeclType) error {
	if err := c.fit.fits(want, p.out); err != nil {
		return errorf(ErrType, "expression returns %s but the field is %s%s", typeName(p.out), typeName(want.CelType()), because(err))
	}
	return nil
}

// collectDeps records the resources r's template, externalRef, forEach and
// includeWhen read.
func collectDeps(r *resource, np *nodeProgram) {
	var progs []*program
	if np.template != nil {
		progs = np.template.programs(progs)
	}
	if np.extRef != nil {
		for _, t := range []tmpl{np.extRef.name, np.extRef.namespace, np.extRef.selector} {
			if t != nil {
				progs = t.programs(progs)
			}
		}
	}
	for _, it := range np.iterators {
		progs = append(progs, it.p)
	}
	for _, cond := range np.include {
		progs = append(progs, cond.p)
	}
	for _, p := range progs {
		for _, ref := range p.refs {
			if ref != varSchema && ref != VarFleet {
				r.deps.Insert(ref)
			}
		}
	}
	r.node.Dependencies = sets.List(r.deps) // sorted
}
