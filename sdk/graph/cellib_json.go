package graph

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// jsonLib is kro's "json" library.
//
//	json.unmarshal(string) dyn   // numbers become doubles, as encoding/json decodes them
//	json.marshal(dyn) string     // keys sorted, no spaces
type jsonLib struct{}

func (jsonLib) LibraryName() string { return "kro.json" }

func (jsonLib) ProgramOptions() []cel.ProgramOption { return nil }

func (jsonLib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("json.unmarshal",
			cel.Overload("json.unmarshal_string", []*cel.Type{cel.StringType}, cel.DynType, cel.UnaryBinding(jsonUnmarshal))),
		cel.Function("json.marshal",
			cel.Overload("json.marshal_dyn", []*cel.Type{cel.DynType}, cel.StringType, cel.UnaryBinding(jsonMarshal))),
	}
}

func jsonUnmarshal(v ref.Val) ref.Val {
	s, ok := v.(types.String)
	if !ok {
		return types.NewErr("json.unmarshal argument must be a string")
	}
	var out any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return types.NewErr("json.unmarshal failed to parse JSON: %s", err.Error())
	}
	return types.DefaultTypeAdapter.NativeToValue(out)
}

func jsonMarshal(v ref.Val) ref.Val {
	native, err := marshalable(v)
	if err != nil {
		return types.NewErr("json.marshal failed to convert value: %s", err.Error())
	}
	raw, err := json.Marshal(native)
	if err != nil {
		return types.NewErr("json.marshal failed to encode value: %s", err.Error())
	}
	return types.String(raw)
}

// marshalable turns a CEL value into what kro hands encoding/json: bytes
// stay bytes (base64 in JSON), timestamps are RFC 3339 in UTC to the second,
// durations use Go's notation, an empty optional is null.
func marshalable(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		return uint64(v), nil
	case types.Double:
		return float64(v), nil
	case types.String:
		return string(v), nil
	case types.Bytes:
		return []byte(v), nil
	case types.Duration:
		return v.Duration.String(), nil
	case types.Timestamp:
		return v.Time.UTC().Format(time.RFC3339), nil
	case *types.Optional:
		if !v.HasValue() {
			return nil, nil
		}
		return marshalable(v.GetValue())
	case *types.Err:
		return nil, v
	case traits.Lister:
		return marshalableList(v)
	case traits.Mapper:
		return marshalableMap(v)
	}
	return nil, fmt.Errorf("unsupported type: %s", v.Type().TypeName())
}

func marshalableList(l traits.Lister) (any, error) {
	out := []any{}
	for it := l.Iterator(); it.HasNext() == types.True; {
		item, err := marshalable(it.Next())
		if err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, nil
}

func marshalableMap(m traits.Mapper) (any, error) {
	if raw, ok := m.Value().(map[string]any); ok {
		return raw, nil
	}
	out := map[string]any{}
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		ks, ok := k.(types.String)
		if !ok {
			return nil, fmt.Errorf("map key must be string, got %s", k.Type().TypeName())
		}
		v, err := marshalable(m.Get(k))
		if err != nil {
			return nil, err
		}
		out[string(ks)] = v
	}
	return out, nil
}
