package graph

import (
	"encoding/base64"
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
type scope struct {
	vals       Values
	extra      map[string]any
	resourceID string
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

// ResolveName implements interpreter.Activation.
func (sc *scope) ResolveName(name string) (any, bool) {
	if v, ok := sc.converted[name]; ok {
		return v, true
	}
	v, ok := sc.resolve(name)
	if !ok {
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
	out, err := run(p.prog, sc)
	if err != nil {
		if isMissingData(err) && (sc.observing || readsResource(p)) {
			return nil, sc.wrap(path, p.written, fmt.Errorf("%w: %v", ErrPending, err))
		}
		return nil, sc.wrap(path, p.written, errorf(ErrEvaluation, "%v", err))
	}
	return out, nil
}

// evalJSON runs p and converts its result to a JSON value. present is false
// when the result is an empty optional.
func (sc *scope) evalJSON(p *program, path string) (v any, present bool, err error) {
	out, err := sc.eval(p, path)
	if err != nil {
		return nil, false, err
	}
	if opt, ok := out.(*types.Optional); ok {
		if !opt.HasValue() {
			return nil, false, nil
		}
		out = opt.GetValue()
	}
	v, err = toJSON(out)
	if err != nil {
		return nil, false, sc.wrap(path, p.written, errorf(ErrEvaluation, "%v", err))
	}
	return v, true, nil
}

// evalBool runs a condition.
func (sc *scope) evalBool(p *program, path string) (bool, error) {
	out, err := sc.eval(p, path)
	if err != nil {
		return false, err
	}
	// As in kro, null and an empty optional read as false.
	if o, isOpt := out.(*types.Optional); isOpt {
		if !o.HasValue() {
			return false, nil
		}
		out = o.GetValue()
	}
	if out == types.NullValue {
		return false, nil
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, sc.wrap(path, p.written, errorf(ErrEvaluation, "want a bool, got %s", out.Type().TypeName()))
	}
	return bool(b), nil
}

func (sc *scope) wrap(path, written string, err error) error {
	return &Error{ResourceID: sc.resourceID, Path: path, Expression: written, Err: err}
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
// float64, string, bool or nil.
func toJSON(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		if uint64(v) > math.MaxInt64 {
			return nil, fmt.Errorf("uint %d does not fit in JSON int64", uint64(v))
		}
		return int64(v), nil
	case types.Double:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%v is not a JSON number", float64(v))
		}
		return float64(v), nil
	case types.String:
		return string(v), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(v), nil
	case types.Timestamp:
		// RFC 3339 to the second, as kro (metav1.Time) writes it.
		return v.Time.UTC().Format(time.RFC3339), nil
	case types.Duration:
		return v.Duration.String(), nil
	case *types.Err:
		return nil, v
	}
	if native, ok := fastJSON(v.Value()); ok {
		return native, nil
	}
	switch v := v.(type) {
	case traits.Lister:
		return listToJSON(v, toJSON)
	case traits.Mapper:
		return mapToJSON(v, toJSON)
	}
	if s, ok := v.ConvertToType(types.StringType).(types.String); ok {
		return string(s), nil
	}
	return nil, fmt.Errorf("cannot turn a %s into JSON", v.Type().TypeName())
}

// fastJSON copies values that are already plain JSON (the common case:
// fields read from Values), skipping CEL's per-element conversion.
func fastJSON(v any) (any, bool) {
	switch v.(type) {
	case map[string]any, []any:
		out, err := copyJSONChecked(v)
		return out, err == nil
	}
	return nil, false
}

// listToJSON converts a list, each item with conv.
func listToJSON(l traits.Lister, conv func(ref.Val) (any, error)) (any, error) {
	out := []any{}
	for it := l.Iterator(); it.HasNext() == types.True; {
		item, err := conv(it.Next())
		if err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, nil
}

// mapToJSON converts a map with string keys, each value with conv.
func mapToJSON(m traits.Mapper, conv func(ref.Val) (any, error)) (any, error) {
	out := map[string]any{}
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		ks, ok := k.(types.String)
		if !ok {
			return nil, fmt.Errorf("map key must be string, got %s", k.Type().TypeName())
		}
		v, err := conv(m.Get(k))
		if err != nil {
			return nil, err
		}
		out[string(ks)] = v
	}
	return out, nil
}

// copyJSON deep-copies a JSON value from a template (known to be valid).
func copyJSON(v any) any {
	out, _ := copyJSONChecked(v)
	return out
}

// copyJSONChecked deep-copies a JSON-like value, normalising Go integer and
// float types to int64 and float64.
func copyJSONChecked(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			c, err := copyJSONChecked(x)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			c, err := copyJSONChecked(x)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case nil, string, bool, int64, float64:
		return v, nil
	case int:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case float32:
		return float64(v), nil
	}
	return nil, fmt.Errorf("unsupported value of type %T", v)
}

// run evaluates prog, turning CEL error values and the cost tracker's panic
// into errors.
func run(prog interpreter.Interpretable, sc *scope) (out ref.Val, err error) {
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
