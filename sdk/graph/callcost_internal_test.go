package graph

import (
	"sort"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unitCost lists the overloads that take a string, bytes, list or map
// and still cost one unit: they read a fixed part of their input (its
// size, one element, one key), or their input is bounded elsewhere.
var unitCost = map[string]bool{}

func init() {
	for _, id := range []string{
		// size, indexing, membership in a map, equality (cel-go's own nodes).
		"size_string", "size_bytes", "size_list", "size_map", "string_size", "bytes_size", "list_size", "map_size",
		"index_list", "index_map", "optional_list_index_int", "optional_map_index_value",
		"list_optindex_optional_int", "map_optindex_optional_value", "optional_list_optindex_optional_int",
		"optional_map_optindex_optional_value", "select_optional_field", "in_map",
		"equals", "not_equals", "logical_and", "logical_or", "logical_not", "conditional", "not_strictly_false",
		"__not_strictly_false__",
		// Conversions of a string or bytes to themselves, and of values of a fixed size.
		"string_to_string", "bytes_to_bytes", "bool_to_string", "int64_to_string", "uint64_to_string", "double_to_string",
		"timestamp_to_string", "duration_to_string", "string_to_int64", "string_to_uint64", "string_to_double",
		"string_to_bool", "string_to_timestamp", "string_to_duration", "to_dyn", "type",
		// Optionals.
		"optional_of", "optional_ofNonZeroValue", "optional_none", "optional_value", "optional_hasValue",
		"optional_or_optional", "optional_orValue_value", "optional_unwrapOpt", "optional_unwrap",
		// One element of a list.
		"list_first", "list_last",
		// Checks of a syntax: linear in a string that is already bounded, and cheap.
		"is_quantity", "is_url", "is_ip", "is_cidr", "is_semver", "string_is_quantity", "string_is_semver",
		// kro's runtime: a map of four strings.
		"runtime_newCondition_map",
		// cel.@block is never planned from an expression a tenant writes.
		"cel_block_list",
	} {
		unitCost[id] = true
	}
}

// sizedArgKinds are the argument kinds whose values can be as large as a
// tenant makes them.
var sizedArgKinds = map[types.Kind]bool{
	types.StringKind: true, types.BytesKind: true, types.ListKind: true, types.MapKind: true,
	types.DynKind: true, types.AnyKind: true, types.TypeParamKind: true,
}

// Every overload of every library the environments offer is either
// priced (callCosts) or known to cost one unit: a library upgrade that
// adds a function fails here until someone decides what it costs.
func TestEveryGrowingOverloadIsPriced(t *testing.T) {
	env, err := fullEnv()
	require.NoError(t, err)
	var unknown []string
	for _, fn := range env.Functions() {
		for _, o := range fn.OverloadDecls() {
			if callCosts[o.ID()] != nil || unitCost[o.ID()] || !takesSized(o.ArgTypes()) {
				continue
			}
			unknown = append(unknown, fn.Name()+" "+o.ID())
		}
	}
	sort.Strings(unknown)
	assert.Empty(t, unknown, "price these overloads in callCosts, or list them in unitCost")
}

func takesSized(args []*cel.Type) bool {
	for _, a := range args {
		if sizedArgKinds[a.Kind()] {
			return true
		}
	}
	return false
}

// Every priced overload exists: a renamed overload would otherwise run
// unpriced.
func TestEveryPricedOverloadExists(t *testing.T) {
	env, err := fullEnv()
	require.NoError(t, err)
	known := map[string]bool{}
	for _, fn := range env.Functions() {
		for _, o := range fn.OverloadDecls() {
			known[o.ID()] = true
		}
	}
	var missing []string
	for id := range callCosts {
		if !known[id] {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing)
}
