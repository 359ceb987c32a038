package graph

import (
	"fmt"
	"math"

	"github.com/google/cel-go/common/types"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// literalFits reports whether a plain template value (no ${}), as decoded
// from JSON, fits a field of CEL type want, the way the API server would
// accept it: a whole number for an integer, any number for a number, and
// null anywhere (it drops the field). Objects and lists are checked field by
// field by the template compiler, so only their shape is checked here.
func literalFits(want *apiservercel.DeclType, v any) bool {
	if want == nil || v == nil {
		return true
	}
	switch want.CelType().Kind() {
	case types.StringKind, types.TimestampKind, types.DurationKind, types.BytesKind:
		_, ok := v.(string)
		return ok
	case types.IntKind:
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case types.DoubleKind:
		_, ok := v.(float64)
		return ok
	case types.BoolKind:
		_, ok := v.(bool)
		return ok
	case types.ListKind:
		_, ok := v.([]any)
		return ok
	case types.MapKind, types.StructKind:
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

func describeLiteral(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%v", v)
}
