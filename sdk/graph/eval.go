package graph

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// scope is what one evaluation sees: the Values plus per-call bindings
// (iterators, the observed object in readyWhen). It is the CEL activation.
// It also carries what bounds the evaluation: the graph's limits, the
// instance's budget, the meter of the expression running and the sizer of
// the value being built.
type scope struct {
	vals       Values
	extra      map[string]any
	resourceID string
	ctx        context.Context
	lim        *Limits
	budget     *Budget
	meter      meter
	// sizer bounds the JSON values built (it points at sz); nil for
	// conditions, which build none.
	sizer *sizer
	sz    sizer
	// observing is set for readyWhen: every field read is of an observed
	// object, so a missing one means "not yet".
	observing bool
	// formats are the format trees of the running program's names (see
	// formatTree); converted keeps each name's converted value for the
	// life of the scope.
	formats   map[string]*formatTree
	converted map[string]any
}

var _ interpreter.Activation = (*scope)(nil)

// newScope returns the scope of one evaluation method called with ctx.
// The caller must call done when the method ends, to charge the budget.
func newScope(ctx context.Context, lim *Limits, vals Values, extra map[string]any, resourceID string) *scope {
	sc := &scope{vals: vals, extra: extra, resourceID: resourceID, ctx: ctx, lim: lim, budget: budgetFor(ctx, lim)}
	sc.meter.lim, sc.meter.budget, sc.meter.ctx = lim, sc.budget, ctx
	return sc
}

// done charges the budget with what the scope's evaluations spent.
func (sc *scope) done() { sc.meter.flush() }

// ResolveName implements interpreter.Activation.
func (sc *scope) ResolveName(name string) (any, bool) {
	if v, ok := sc.converted[name]; ok {
		return v, true
	}
	v, ok := sc.resolve(name)
	if !ok {
		if name == VarCluster {
			// Only the variable gets here: a resource named cluster is one
			// of the program's refs, and eval runs no program before all
			// its refs are there.
			return noCluster, true
		}
		return nil, false
	}
	if f := sc.formats[name]; f != nil {
		v = f.apply(v)
		if sc.converted == nil {
			sc.converted = map[string]any{}
		}
		sc.converted[name] = v
	}
	return v, true
}

func (sc *scope) resolve(name string) (any, bool) {
	if v, ok := sc.extra[name]; ok {
		return v, true
	}
	v, ok := sc.vals[name]
	if !ok || v == nil {
		return nil, false
	}
	return plain(v), true
}

// Parent implements interpreter.Activation.
func (sc *scope) Parent() interpreter.Activation { return nil }

// plain unwraps unstructured objects so that callers may put either form in
// Values.
func plain(v any) any {
	switch v := v.(type) {
	case *unstructured.Unstructured:
		return v.Object
	case unstructured.Unstructured:
		return v.Object
	case []*unstructured.Unstructured:
		out := make([]any, len(v))
		for i, u := range v {
			out[i] = u.Object
		}
		return out
	}
	return v
}

func (sc *scope) has(name string) bool {
	if _, ok := sc.converted[name]; ok {
		return true
	}
	_, ok := sc.resolve(name)
	return ok
}

// eval runs p. It returns an error wrapping ErrPending when p needs a value
// that is absent, or when it reads a field a resource does not have yet.
func (sc *scope) eval(p *program, path string) (ref.Val, error) {
	for _, name := range p.refs {
		if !sc.has(name) {
			return nil, sc.wrap(path, p.written, fmt.Errorf("%w: %q is not observed yet", ErrPending, name))
		}
	}
	sc.formats = p.formats
	if unmetered {
		return sc.evalUnmetered(p, path)
	}
	sc.meter.start()
	out, err := run(p.prog, sc)
	sc.meter.finish()
	if sc.meter.err != nil {
		// A bound stops the evaluation whatever the expression does with
		// the error (a || may swallow it).
		return nil, sc.wrap(path, p.written, sc.meter.err)
	}
	if err != nil {
		if isMissingData(err) && (sc.observing || readsResource(p)) {
			return nil, sc.wrap(path, p.written, fmt.Errorf("%w: %v", ErrPending, err))
		}
		return nil, sc.wrap(path, p.written, errorf(ErrEvaluation, "%s", truncate(err.Error(), sc.lim.MaxMessageExpression)))
	}
	return out, nil
}

// evalUnmetered is eval without the meter (see unmetered).
func (sc *scope) evalUnmetered(p *program, path string) (ref.Val, error) {
	out, err := run(p.prog, sc)
	if err != nil {
		return nil, sc.wrap(path, p.written, errorf(ErrEvaluation, "%v", err))
	}
	return out, nil
}

// evalOptional runs p and unwraps an optional result: present is false
// when the result is an empty optional.
func (sc *scope) evalOptional(p *program, path string) (out ref.Val, present bool, err error) {
	out, err = sc.eval(p, path)
	if err != nil {
		return nil, false, err
	}
	if opt, ok := out.(*types.Optional); ok {
		if !opt.HasValue() {
			return nil, false, nil
		}
		out = opt.GetValue()
	}
	return out, true, nil
}

// evalJSON runs p and converts its result to a JSON value. present is false
// when the result is an empty optional.
func (sc *scope) evalJSON(p *program, path string) (v any, present bool, err error) {
	out, present, err := sc.evalOptional(p, path)
	if err != nil || !present {
		return nil, false, err
	}
	v, err = toJSON(out, sc.sizer)
	if err != nil {
		return nil, false, sc.wrap(path, p.written, errorf(ErrEvaluation, "%w", err))
	}
	return v, true, nil
}

// evalBool runs a condition.
func (sc *scope) evalBool(p *program, path string) (bool, error) {
	out, present, err := sc.evalOptional(p, path)
	if err != nil {
		return false, err
	}
	// As in kro, null and an empty optional read as false.
	if !present || out == types.NullValue {
		return false, nil
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, sc.wrap(path, p.written, errorf(ErrEvaluation, "want a bool, got %s", out.Type().TypeName()))
	}
	return bool(b), nil
}

func (sc *scope) wrap(path, written string, err error) error {
	return &Error{ResourceID: sc.resourceID, Path: path, Expression: written, Err: err, maxExpression: sc.lim.MaxMessageExpression}
}

func readsResource(p *program) bool {
	for _, r := range p.refs {
		if r != varSchema {
			return true
		}
	}
	return false
}

// isMissingData reports whether a CEL runtime error says that a field, key
// or list item is not there (yet).
func isMissingData(err error) bool {
	msg := err.Error()
	for _, s := range []string{"no such key", "no such attribute", "no such field", "out of range", "out of bounds"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// toJSON converts a CEL value to plain JSON: map[string]any, []any, int64,
// float64, string, bool or nil. sz counts what is built (nil: no bound).
func toJSON(v ref.Val, sz *sizer) (any, error) {
	switch v := v.(type) {
	case types.Null:
		return nil, sz.take(4)
	case types.Bool:
		return bool(v), sz.take(5)
	case types.Int:
		return int64(v), sz.take(8)
	case types.Uint:
		if uint64(v) > math.MaxInt64 {
			return nil, fmt.Errorf("uint %d does not fit in JSON int64", uint64(v))
		}
		return int64(v), sz.take(8)
	case types.Double:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%v is not a JSON number", float64(v))
		}
		return float64(v), sz.take(8)
	case types.String:
		return string(v), sz.take(len(v) + 2)
	case types.Bytes:
		if err := sz.take((len(v)+2)/3*4 + 2); err != nil {
			return nil, err
		}
		return base64.StdEncoding.EncodeToString(v), nil
	case types.Timestamp:
		// RFC 3339 to the second, as kro (metav1.Time) writes it.
		return v.Time.UTC().Format(time.RFC3339), sz.take(22)
	case types.Duration:
		return v.Duration.String(), sz.take(16)
	case *types.Err:
		return nil, v
	}
	if native, ok, err := fastJSON(v.Value(), sz); ok || err != nil {
		return native, err
	}
	switch v := v.(type) {
	case traits.Lister:
		return listToJSON(v, func(x ref.Val) (any, error) { return toJSON(x, sz) }, sz)
	case traits.Mapper:
		return mapToJSON(v, func(x ref.Val) (any, error) { return toJSON(x, sz) }, sz)
	}
	if s, ok := v.ConvertToType(types.StringType).(types.String); ok {
		return string(s), sz.take(len(s) + 2)
	}
	return nil, fmt.Errorf("cannot turn a %s into JSON", v.Type().TypeName())
}

// fastJSON copies values that are already plain JSON (the common case:
// fields read from Values), skipping CEL's per-element conversion.
func fastJSON(v any, sz *sizer) (any, bool, error) {
	switch v.(type) {
	case map[string]any, []any:
		out, err := copyJSONChecked(v, sz)
		if errors.Is(err, ErrLimit) {
			return nil, false, err
		}
		return out, err == nil, nil
	}
	return nil, false, nil
}

// listToJSON converts a list, each item with conv.
func listToJSON(l traits.Lister, conv func(ref.Val) (any, error), sz *sizer) (any, error) {
	out := []any{}
	for it := l.Iterator(); it.HasNext() == types.True; {
		if err := sz.take(1); err != nil {
			return nil, err
		}
		item, err := conv(it.Next())
		if err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, sz.take(2)
}

// mapToJSON converts a map with string keys, each value with conv.
func mapToJSON(m traits.Mapper, conv func(ref.Val) (any, error), sz *sizer) (any, error) {
	out := map[string]any{}
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		ks, ok := k.(types.String)
		if !ok {
			return nil, fmt.Errorf("map key must be string, got %s", k.Type().TypeName())
		}
		if err := sz.take(len(ks) + 4); err != nil {
			return nil, err
		}
		v, err := conv(m.Get(k))
		if err != nil {
			return nil, err
		}
		out[string(ks)] = v
	}
	return out, sz.take(2)
}

// copyJSON deep-copies a JSON value from a template (known to be valid).
func copyJSON(v any, sz *sizer) (any, error) {
	out, err := copyJSONChecked(v, sz)
	if errors.Is(err, ErrLimit) {
		return nil, err
	}
	return out, nil
}

// copyJSONChecked deep-copies a JSON-like value, normalising Go integer and
// float types to int64 and float64, and counting it with sz.
func copyJSONChecked(v any, sz *sizer) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if err := sz.take(len(k) + 4); err != nil {
				return nil, err
			}
			c, err := copyJSONChecked(x, sz)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, sz.take(2)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			c, err := copyJSONChecked(x, sz)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, sz.take(len(v) + 2)
	case string:
		return v, sz.take(len(v) + 2)
	case nil, bool, int64, float64:
		return v, sz.take(8)
	case int:
		return int64(v), sz.take(8)
	case int32:
		return int64(v), sz.take(8)
	case float32:
		return float64(v), sz.take(8)
	}
	return nil, fmt.Errorf("unsupported value of type %T", v)
}

// run evaluates prog, turning CEL error values and panics into errors.
func run(prog interpreter.InterpretableV2, sc *scope) (out ref.Val, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("evaluation stopped: %v", r)
		}
	}()
	out = prog.Eval(sc)
	if e, ok := out.(*types.Err); ok {
		return nil, e
	}
	if types.IsUnknown(out) {
		return nil, fmt.Errorf("result is unknown")
	}
	return out, nil
}
