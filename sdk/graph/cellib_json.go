package graph

import (
	"encoding/json"

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

// marshalable turns a CEL value into what kro hands encoding/json: as
// toJSON renders it (bytes in base64, timestamps in RFC 3339 to the second,
// durations in Go's notation), except that an empty optional is null and a
// uint of any size is a number.
func marshalable(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.Uint:
		return uint64(v), nil
	case *types.Optional:
		if !v.HasValue() {
			return nil, nil
		}
		return marshalable(v.GetValue())
	case traits.Lister:
		return listToJSON(v, marshalable, nil)
	case traits.Mapper:
		if raw, ok := v.Value().(map[string]any); ok {
			return raw, nil
		}
		return mapToJSON(v, marshalable, nil)
	}
	return toJSON(v, nil)
}
