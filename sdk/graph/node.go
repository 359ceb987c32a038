package graph

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

// nodeProgram holds the compiled expressions of one resource.
type nodeProgram struct {
	id         string
	collection bool
	template   tmpl // nil for an externalRef
	extRef     *refProgram
	include    []condition
	readyWhen  []condition
	iterators  []iteratorProgram
	// formats is the format tree of one observed object of this node.
	formats *formatTree
	// limits are the graph's, which every evaluation enforces.
	limits Limits
}

type condition struct {
	p    *program
	path string
}

type iteratorProgram struct {
	name string
	p    *program
	path string
	// formats is the format tree of one item: iterations hold JSON, and
	// a timestamp item, for one, is parsed back before the template runs.
	formats *formatTree
}

type refProgram struct {
	gvk                       schema.GroupVersionKind
	name, namespace, selector tmpl // nil when absent
}

func (np *nodeProgram) scope(ctx context.Context, vals Values, extra map[string]any) *scope {
	return newScope(ctx, &np.limits, vals, extra, np.id)
}

func (np *nodeProgram) included(ctx context.Context, vals Values) (bool, error) {
	sc := np.scope(ctx, vals, nil)
	defer sc.done()
	for _, c := range np.include {
		ok, err := sc.evalBool(c.p, c.path)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// iterations expands forEach and counts the node's children in the
// instance's budget. Each iterator's list is measured before it is
// converted, so that a list far past MaxIterations is refused before it
// is copied.
func (np *nodeProgram) iterations(ctx context.Context, vals Values) ([]map[string]any, error) {
	sc := np.scope(ctx, vals, nil)
	defer sc.done()
	sc.bound(newSizer("forEach's lists", "MaxRenderedBytes", np.limits.MaxRenderedBytes))
	lists := make([][]any, len(np.iterators))
	total := 1
	for i, it := range np.iterators {
		l, err := sc.evalList(it.p, it.path, MaxIterations/max(total, 1))
		if err != nil {
			return nil, err
		}
		lists[i] = l
		total *= len(l)
		if total > MaxIterations {
			return nil, sc.wrap(it.path, it.p.written, tooManyIterations())
		}
	}
	if err := sc.budget.AddChildren(total); err != nil {
		return nil, &Error{ResourceID: np.id, Path: "forEach", Err: err}
	}
	return np.product(lists, total), nil
}

func tooManyIterations() error {
	return fmt.Errorf("%w: more than %d combinations", ErrTooManyIterations, MaxIterations)
}

// evalList runs an iterator: a list of at most most items (null reads as
// an empty list).
func (sc *scope) evalList(p *program, path string, most int) ([]any, error) {
	out, err := sc.eval(p, path)
	if err != nil {
		return nil, err
	}
	if opt, ok := out.(*types.Optional); ok {
		if !opt.HasValue() {
			return nil, nil
		}
		out = opt.GetValue()
	}
	if out == types.NullValue {
		return nil, nil
	}
	l, ok := out.(traits.Lister)
	if !ok {
		return nil, sc.wrap(path, p.written, errorf(ErrEvaluation, "want a list, got %s", out.Type().TypeName()))
	}
	if n, _ := l.Size().(types.Int); int(n) > most {
		return nil, sc.wrap(path, p.written, tooManyIterations())
	}
	v, err := toJSON(out, sc.sizer)
	if err != nil {
		return nil, sc.wrap(path, p.written, errorf(ErrEvaluation, "%w", err))
	}
	items, _ := v.([]any)
	return items, nil
}

// product expands the cartesian product of lists, the last iterator varying
// fastest.
func (np *nodeProgram) product(lists [][]any, total int) []map[string]any {
	out := make([]map[string]any, 0, total)
	for n := range total {
		m := make(map[string]any, len(lists))
		for i := len(lists) - 1; i >= 0; i-- {
			l := lists[i]
			m[np.iterators[i].name] = l[n%len(l)]
			n /= len(l)
		}
		out = append(out, m)
	}
	return out
}

func (np *nodeProgram) render(ctx context.Context, vals Values, iteration map[string]any) (*unstructured.Unstructured, error) {
	if np.template == nil {
		return nil, &Error{ResourceID: np.id, Err: errorf(ErrInvalid, "an externalRef has no template to render")}
	}
	for _, it := range np.iterators {
		if _, ok := iteration[it.name]; !ok {
			return nil, &Error{ResourceID: np.id, Path: it.path, Err: errorf(ErrInvalid, "iteration has no value for iterator %q", it.name)}
		}
	}
	sc := np.scope(ctx, vals, np.typedIteration(iteration))
	defer sc.done()
	sc.bound(renderSizer(sc.budget))
	v, _, err := np.template.eval(sc)
	sc.sizer.done()
	if err != nil {
		return nil, np.limitError(err)
	}
	return &unstructured.Unstructured{Object: v.(map[string]any)}, nil
}

// limitError names the resource in an error that does not yet (a literal
// that passed the rendering allowance).
func (np *nodeProgram) limitError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{ResourceID: np.id, Err: err, maxExpression: np.limits.MaxMessageExpression}
}

// typedIteration returns iteration with each item's formatted strings
// parsed (see formatTree); iteration itself is left as it is.
func (np *nodeProgram) typedIteration(iteration map[string]any) map[string]any {
	var out map[string]any
	for _, it := range np.iterators {
		v, ok := iteration[it.name]
		if it.formats == nil || !ok {
			continue
		}
		if out == nil {
			out = maps.Clone(iteration)
		}
		out[it.name] = it.formats.apply(v)
	}
	if out == nil {
		return iteration
	}
	return out
}

func (np *nodeProgram) ref(ctx context.Context, vals Values) (ExternalRef, error) {
	if np.extRef == nil {
		return ExternalRef{}, &Error{ResourceID: np.id, Err: errorf(ErrInvalid, "not an externalRef")}
	}
	sc := np.scope(ctx, vals, nil)
	defer sc.done()
	sc.bound(newSizer("the externalRef", "MaxValueBytes", np.limits.MaxValueBytes))
	out := ExternalRef{GVK: np.extRef.gvk}
	var err error
	if out.Name, err = evalString(sc, np.extRef.name, "externalRef.metadata.name"); err != nil {
		return ExternalRef{}, err
	}
	if out.Namespace, err = evalString(sc, np.extRef.namespace, "externalRef.metadata.namespace"); err != nil {
		return ExternalRef{}, err
	}
	if np.extRef.selector != nil {
		out.Selector, err = evalSelector(sc, np.extRef.selector)
	}
	return out, err
}

// evalString evaluates a piece that must be a string (or absent: ""); path
// names it in errors.
func evalString(sc *scope, t tmpl, path string) (string, error) {
	if t == nil {
		return "", nil
	}
	v, _, err := t.eval(sc)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok && v != nil {
		return "", sc.wrap(path, "", errorf(ErrEvaluation, "want a string, got %T", v))
	}
	return s, nil
}

func evalSelector(sc *scope, t tmpl) (*metav1.LabelSelector, error) {
	const path = "externalRef.metadata.selector"
	v, _, err := t.eval(sc)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, sc.wrap(path, "", errorf(ErrEvaluation, "want a label selector object, got %T", v))
	}
	sel := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(m, sel, true); err != nil {
		return nil, sc.wrap(path, "", errorf(ErrEvaluation, "not a label selector: %v", err))
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return nil, sc.wrap(path, "", errorf(ErrEvaluation, "invalid label selector: %v", err))
	}
	return sel, nil
}

func (np *nodeProgram) ready(ctx context.Context, vals Values, observed map[string]any) (bool, error) {
	extra := map[string]any{np.id: observed}
	sc := np.scope(ctx, vals, extra)
	defer sc.done()
	if np.collection {
		extra[varEach] = observed
	}
	if np.formats != nil {
		converted := np.formats.apply(observed)
		sc.converted = map[string]any{np.id: converted}
		if np.collection {
			sc.converted[varEach] = converted
		}
	}
	sc.observing = true
	for _, c := range np.readyWhen {
		ok, err := sc.evalBool(c.p, c.path)
		if errors.Is(err, ErrPending) {
			return false, nil // a field readyWhen reads is not there yet
		}
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// compileResource compiles every expression of r into its node program.
func (c *compiler) compileResource(r *resource) {
	np := &nodeProgram{id: r.node.ID, collection: r.node.Collection, formats: formatsOf(r.decl), limits: c.opts.Limits}
	r.node.program = np
	env := c.compileIterators(r, np)
	if env == nil {
		return
	}
	tc := &templateCompiler{c: c, env: env, resourceID: r.node.ID, check: c.checkField}
	if r.src.ExternalRef != nil {
		np.extRef = c.compileExternalRef(r, tc)
	} else {
		np.template = tc.object("", r.template, r.decl)
	}
	np.include = c.compileConditions(r, "includeWhen", r.src.IncludeWhen, c.graphEnv)
	if readyEnv := c.readyEnv(r); readyEnv != nil {
		np.readyWhen = c.compileConditions(r, "readyWhen", r.src.ReadyWhen, readyEnv)
	}
	c.collectDeps(r, np)
}

// compileIterators compiles forEach and returns the environment of the
// resource's template: the graph's plus the iterators.
func (c *compiler) compileIterators(r *resource, np *nodeProgram) *cel.Env {
	if len(r.iterators) == 0 {
		return c.graphEnv
	}
	vars := map[string]*cel.Type{}
	for _, it := range r.iterators {
		p, err := c.compile(c.graphEnv, it.src, it.written, r.node.ID, it.path)
		if err != nil {
			c.fail(&Error{ResourceID: r.node.ID, Path: it.path, Expression: it.written, Err: err})
			vars[it.name] = cel.DynType
			continue
		}
		elem, ok := isList(p.out)
		if !ok {
			c.fail(&Error{ResourceID: r.node.ID, Path: it.path, Expression: it.written, Err: errorf(ErrType, "forEach needs a list, got %s", typeName(p.out))})
			elem = cel.DynType
		}
		vars[it.name] = elem
		np.iterators = append(np.iterators, iteratorProgram{name: it.name, p: p, path: it.path, formats: c.formatsOfType(elem, 0)})
	}
	env, err := withVariables(c.graphEnv, vars)
	if err != nil {
		c.fail(&Error{ResourceID: r.node.ID, Path: "forEach", Err: errorf(ErrExpression, "%v", err)})
		return nil
	}
	return env
}

func (c *compiler) compileExternalRef(r *resource, tc *templateCompiler) *refProgram {
	md := r.src.ExternalRef.Metadata
	rp := &refProgram{gvk: r.node.GVK}
	if md.Name != "" {
		rp.name = tc.value("externalRef.metadata.name", md.Name, apiservercel.StringType)
	}
	if md.Namespace != "" {
		rp.namespace = tc.value("externalRef.metadata.namespace", md.Namespace, apiservercel.StringType)
	}
	if r.selector != nil {
		rp.selector = tc.value("externalRef.metadata.selector", r.selector, nil)
	}
	return rp
}

// compileConditions compiles includeWhen or readyWhen entries: each a
// single ${} expression (or, as kro once allowed, a bare CEL expression)
// returning a bool.
func (c *compiler) compileConditions(r *resource, field string, entries []string, env *cel.Env) []condition {
	var out []condition
	for i, written := range entries {
		path := fmt.Sprintf("%s[%d]", field, i)
		fail := func(err error) {
			c.fail(&Error{ResourceID: r.node.ID, Path: path, Expression: written, Err: err})
		}
		src, err := conditionSource(written)
		if err != nil {
			fail(err)
			continue
		}
		if !expr.HasExpr(written) {
			c.extension(r.node.ID, path, "condition without ${}")
		}
		if field == "readyWhen" && !c.checkReadyRefs(r, env, src, fail) {
			continue
		}
		p, err := c.compile(env, src, written, r.node.ID, path)
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
func (c *compiler) isCondition(r *resource, field string, p *program) bool {
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
func (c *compiler) readyEnv(r *resource) *cel.Env {
	if len(r.src.ReadyWhen) == 0 {
		return nil
	}
	if !r.node.Collection {
		return c.graphEnv
	}
	vars := map[string]*cel.Type{r.node.ID: celType(r.decl), varEach: celType(r.decl)}
	env, err := withVariables(c.kinds.env, vars)
	if err != nil {
		c.fail(&Error{ResourceID: r.node.ID, Path: "readyWhen", Err: errorf(ErrExpression, "%v", err)})
		return nil
	}
	return env
}

func (c *compiler) checkReadyRefs(r *resource, env *cel.Env, src string, fail func(error)) bool {
	allowed := fmt.Sprintf("%q", r.node.ID)
	if r.node.Collection {
		// As in kro, a collection's readyWhen reads each item as each.
		allowed = "each"
	}
	for _, id := range parsedIdentifiers(env, src) {
		if (id != r.node.ID || r.node.Collection) && (c.valueNames[id] || c.isIteratorName(id)) {
			fail(errorf(ErrReference, "readyWhen may only reference %s, not %q", allowed, id))
			return false
		}
	}
	return true
}

func (c *compiler) isIteratorName(name string) bool {
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
func (c *compiler) checkField(path string, p *program, want *apiservercel.DeclType) error {
	if err := c.fits(want, p.out); err != nil {
		return errorf(ErrType, "expression returns %s but the field is %s%s", typeName(p.out), typeName(want.CelType()), because(err))
	}
	return nil
}

// collectDeps records the resources r's template, externalRef, forEach and
// includeWhen read.
func (c *compiler) collectDeps(r *resource, np *nodeProgram) {
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
			if ref != varSchema {
				r.deps.Insert(ref)
			}
		}
	}
	r.node.Dependencies = sortedSet(r.deps)
}
