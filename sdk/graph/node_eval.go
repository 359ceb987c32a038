package graph

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	out, present, err := sc.evalOptional(p, path)
	if err != nil || !present || out == types.NullValue {
		return nil, err
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
