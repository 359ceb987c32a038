package graph

import (
	"math/bits"
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// priceFunc prices one call from its arguments, before it runs: the cost
// units the call will spend, or an error wrapping ErrLimit when its output
// would pass the limits. It must itself run in time bounded by the limits
// (a walk of a value stops as soon as the value is too large).
type priceFunc func(args []ref.Val, lim *Limits) (uint64, error)

// Cost units follow the ones Kubernetes uses for CEL: one unit per
// comprehension step, per list element or map entry touched, and per ten
// bytes of string traversed (see meter.go). A function that allocates its
// output pays for the output too.

// callCosts prices every function, of every library the environments
// offer, whose cost or output grows with its inputs, by overload id. Any
// other call costs one unit. TestEveryGrowingOverloadIsPriced keeps it in
// step with the libraries.
var callCosts = map[string]priceFunc{
	// --- The standard library. ---
	"add_string": func(a []ref.Val, l *Limits) (uint64, error) {
		return bytesOut("a concatenated string", strLen(a[0])+strLen(a[1]), l)
	},
	"add_bytes": func(a []ref.Val, l *Limits) (uint64, error) {
		return bytesOut("concatenated bytes", strLen(a[0])+strLen(a[1]), l)
	},
	"add_list": func(a []ref.Val, l *Limits) (uint64, error) {
		c, err := elemsOut("a concatenated list", size(a[0])+size(a[1]), l)
		if _, appending := a[0].(traits.MutableLister); appending {
			// A comprehension's accumulator (map, filter) grows in place.
			return uint64(size(a[1])) + 1, err
		}
		return c, err
	},
	"string_to_bytes": traversal(0), "bytes_to_string": traversal(0),
	"starts_with_string": traversal(1), "ends_with_string": traversal(1),
	"contains_string": product(0, 1),
	"matches":         regexPrice, "matches_string": regexPrice,
	"in_list":     elems(1),
	"less_string": shorter, "less_equals_string": shorter, "greater_string": shorter, "greater_equals_string": shorter,
	"less_bytes": shorter, "less_equals_bytes": shorter, "greater_bytes": shorter, "greater_equals_bytes": shorter,

	// --- cel-go's strings (ext.Strings). ---
	"string_char_at_int": traversal(0), "string_substring_int": traversal(0), "string_substring_int_int": traversal(0),
	"string_index_of_string": product(0, 1), "string_index_of_string_int": product(0, 1),
	"string_last_index_of_string": product(0, 1), "string_last_index_of_string_int": product(0, 1),
	"string_lower_ascii": traversal(0), "string_upper_ascii": traversal(0), "string_trim": traversal(0),
	"string_reverse":                   traversal(0),
	"string_replace_string_string":     replacePrice,
	"string_replace_string_string_int": replacePrice,
	"string_split_string":              splitPrice,
	"string_split_string_int":          splitPrice,
	"list_join":                        joinPrice,
	"list_join_string":                 joinPrice,
	"string_format":                    formatPrice,
	"strings_quote": func(a []ref.Val, l *Limits) (uint64, error) {
		// An escape is at most four characters per byte (\xNN).
		return bytesOut("a quoted string", 4*strLen(a[0])+2, l)
	},

	// --- cel-go's encoders (ext.Encoders). ---
	"base64_encode_bytes": func(a []ref.Val, l *Limits) (uint64, error) {
		return bytesOut("a base64 encoding", (strLen(a[0])+2)/3*4, l)
	},
	"base64_decode_string": traversal(0),
	// cel-go's json.encode (ext.Encoders, since cel-go v0.31) writes the
	// same compact JSON as kro's json.marshal.
	"json_encode_dyn": jsonMarshalPrice,

	// --- cel-go's lists (ext.Lists) and two-variable comprehensions. ---
	"lists_range": func(a []ref.Val, l *Limits) (uint64, error) {
		n, _ := a[0].(types.Int)
		return elemsOut("lists.range", int(max(min(n, types.Int(l.MaxValueBytes)+1), 0)), l)
	},
	"list_distinct": func(a []ref.Val, l *Limits) (uint64, error) {
		n := uint64(size(a[0]))
		return saturatingMul(n, n) / 2, nil // each item is compared with the ones kept
	},
	"list_flatten":             flattenPrice,
	"list_flatten_int":         flattenPrice,
	"list_reverse":             elems(0),
	"list_slice":               elems(0),
	"@mapInsert_map_key_value": mapInsertPrice,
	"@mapInsert_map_map":       mapInsertPrice,

	// --- cel-go's sets (ext.Sets): each item of one list is looked up in the other. ---
	"list_sets_contains_list":   product(0, 1),
	"list_sets_equivalent_list": product(0, 1),
	"list_sets_intersects_list": product(0, 1),

	// --- the Kubernetes libraries. ---
	"list_a_index_of_int":      listSearch,
	"list_a_last_index_of_int": listSearch,
	"string_find_string":       regexPrice,
	"string_find_all_string":   findAllPrice, "string_find_all_string_int": findAllPrice,
	"string_to_url": traversal(0), "string_to_ip": traversal(0), "string_to_cidr": traversal(0),
	"string_to_quantity": traversal(0), "string_to_semver": traversal(0), "string_bool_to_semver": traversal(0),
	"format-validate": traversal(1), "format-named": traversal(0),
	"cidr_contains_cidr_string": traversal(1), "cidr_contains_ip_string": traversal(1),
	"ip_is_canonical": traversal(0), "is_quantity_string": traversal(0), "is_semver_string": traversal(0),
	"is_semver_string_bool": traversal(0), "is_url_string": traversal(0),

	// --- kro's libraries (cellib_*.go). ---
	"random.seededString_int_string": func(a []ref.Val, l *Limits) (uint64, error) {
		n, _ := a[0].(types.Int)
		c, err := bytesOut("random.seededString", int(max(min(n, types.Int(l.MaxValueBytes)+1), 0)), l)
		return c + units(strLen(a[1])), err
	},
	"random.seededInt_int_int_string": traversal(2),
	"json.marshal_dyn":                jsonMarshalPrice,
	"json.unmarshal_string": func(a []ref.Val, _ *Limits) (uint64, error) {
		// Decoding allocates a value for every few bytes of input.
		return uint64(strLen(a[0])), nil
	},
	"map_merge": func(a []ref.Val, l *Limits) (uint64, error) {
		return elemsOut("a merged map", size(a[0])+size(a[1]), l)
	},
	"dyn_deepmerge_dyn": deepMergePrice,
	"lists.setAtIndex_list_int_T": func(a []ref.Val, l *Limits) (uint64, error) {
		return elemsOut("an edited list", size(a[0]), l)
	},
	"lists.insertAtIndex_list_int_T": func(a []ref.Val, l *Limits) (uint64, error) {
		return elemsOut("an edited list", size(a[0])+1, l)
	},
	"lists.removeAtIndex_list_int": elems(0),
	"hash.fnv64a_string":           traversal(0), "hash.sha256_string": traversal(0), "hash.md5_string": traversal(0),
	"runtime_condition_dyn_string": func(a []ref.Val, _ *Limits) (uint64, error) {
		return uint64(size(a[1])) + 1, nil // the conditions of one object are searched
	},
}

func init() {
	// Sorting, min, max and sum, for every element type.
	for _, t := range []string{"bool", "bytes", "double", "int", "string", "uint", "google.protobuf.Duration", "google.protobuf.Timestamp"} {
		callCosts["list_"+t+"_sort"] = sortPrice
		callCosts["list_"+t+"_sortByAssociatedKeys"] = sortPrice
	}
	for _, t := range []string{"bool", "bytes", "double", "int", "string", "uint", "duration", "timestamp"} {
		callCosts["list_"+t+"_max_"+t] = elems(0)
		callCosts["list_"+t+"_min_"+t] = elems(0)
		callCosts["list_"+t+"_is_sorted_bool"] = elems(0)
	}
	for _, t := range []string{"double", "int", "uint", "duration"} {
		callCosts["list_"+t+"_sum_"+t] = elems(0)
	}
	for _, t := range []string{"double", "int", "uint"} {
		callCosts["math_@max_list_"+t] = elems(0)
		callCosts["math_@min_list_"+t] = elems(0)
	}
	// Reading a timestamp in a named time zone parses the zone's name.
	for _, part := range []string{"day_of_month_1_based", "day_of_month", "day_of_week", "day_of_year", "year",
		"hours", "milliseconds", "minutes", "month"} {
		callCosts["timestamp_to_"+part+"_with_tz"] = traversal(1)
	}
	callCosts["timestamp_to_seconds_tz"] = traversal(1)
}

// defaultLimits serve a guard that runs outside our evaluations.
var defaultLimits = func() *Limits { l := Limits{}.WithDefaults(); return &l }()

// strLen is the length in bytes of a string or bytes value, else 0.
func strLen(v ref.Val) int {
	switch v := v.(type) {
	case types.String:
		return len(v)
	case types.Bytes:
		return len(v)
	}
	return 0
}

// size is the number of elements of a list or map, the length of a string,
// else 1.
func size(v ref.Val) int {
	switch v := v.(type) {
	case types.String:
		return len(v)
	case types.Bytes:
		return len(v)
	case traits.Sizer:
		if n, ok := v.Size().(types.Int); ok {
			return int(n)
		}
	}
	return 1
}

// units is the cost of traversing n bytes.
func units(n int) uint64 { return uint64(n+9) / 10 }

func saturatingMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return ^uint64(0)
	}
	return lo
}

// bytesOut prices an output of n bytes, refused past Limits.MaxValueBytes.
func bytesOut(what string, n int, l *Limits) (uint64, error) {
	if n > l.MaxValueBytes || n < 0 {
		return 0, errorf(ErrLimit, "%s would be %d bytes or more, over the limit of %d (Limits.MaxValueBytes)", what, n, l.MaxValueBytes)
	}
	return units(n) + 1, nil
}

// elemsOut prices an output of n elements, refused past
// Limits.MaxValueBytes elements.
func elemsOut(what string, n int, l *Limits) (uint64, error) {
	if n > l.MaxValueBytes || n < 0 {
		return 0, errorf(ErrLimit, "%s would have %d elements or more, over the limit of %d (Limits.MaxValueBytes)", what, n, l.MaxValueBytes)
	}
	return uint64(n) + 1, nil
}

// traversal prices a function that reads argument i once.
func traversal(i int) priceFunc {
	return func(a []ref.Val, _ *Limits) (uint64, error) { return units(strLen(a[i])) + 1, nil }
}

// shorter prices a comparison of two strings: up to the shorter one.
func shorter(a []ref.Val, _ *Limits) (uint64, error) {
	return units(min(strLen(a[0]), strLen(a[1]))) + 1, nil
}

// elems prices a function that touches every element of argument i.
func elems(i int) priceFunc {
	return func(a []ref.Val, _ *Limits) (uint64, error) { return uint64(size(a[i])) + 1, nil }
}

// product prices a search of argument j in argument i: in the worst case
// every position of one is compared with all of the other.
func product(i, j int) priceFunc {
	return func(a []ref.Val, _ *Limits) (uint64, error) {
		return saturatingMul(scaled(a[i]), scaled(a[j])) + 1, nil
	}
}

// scaled is the size of a value in cost units: strings by ten bytes.
func scaled(v ref.Val) uint64 {
	switch v.(type) {
	case types.String, types.Bytes:
		return units(strLen(v)) + 1
	}
	return uint64(size(v)) + 1
}

// listSearch prices list.indexOf(x): every element compared with x.
func listSearch(a []ref.Val, _ *Limits) (uint64, error) {
	return saturatingMul(uint64(size(a[0]))+1, scaled(a[1])), nil
}

// regexPrice prices matching a pattern against a string: RE2 runs in time
// proportional to both (cel-go's estimate: a regex term every four
// characters).
func regexPrice(a []ref.Val, _ *Limits) (uint64, error) {
	s, re := strLen(a[0]), strLen(a[1])
	return saturatingMul(units(s)+1, uint64(re+3)/4+1), nil
}

// findAllPrice is regexPrice plus the result: at most one match per
// position (and one at the end), or n.
func findAllPrice(a []ref.Val, l *Limits) (uint64, error) {
	matches := strLen(a[0]) + 1
	if len(a) == 3 {
		if n, ok := a[2].(types.Int); ok && n >= 0 && int64(n) < int64(matches) {
			matches = int(n)
		}
	}
	c, err := elemsOut("findAll's result", matches, l)
	r, _ := regexPrice(a, l)
	return c + r, err
}

// replacePrice bounds s.replace(old, new[, n]) by the most replacements
// old can have in s (one per character and one at the end when old is
// empty).
func replacePrice(a []ref.Val, l *Limits) (uint64, error) {
	s, old, repl := strLen(a[0]), strLen(a[1]), strLen(a[2])
	count := s + 1
	if old > 0 {
		count = s / old
	}
	if len(a) == 4 {
		if n, ok := a[3].(types.Int); ok && n >= 0 && int64(n) < int64(count) {
			count = int(n)
		}
	}
	out := s
	if repl > old {
		grow := saturatingMul(uint64(count), uint64(repl-old))
		if grow > uint64(l.MaxValueBytes) {
			return bytesOut("a replaced string", l.MaxValueBytes+1, l)
		}
		out += int(grow)
	}
	c, err := bytesOut("a replaced string", out, l)
	return c + saturatingMul(units(s), uint64(old/10+1)), err
}

// splitPrice bounds s.split(sep[, n]) by the most pieces sep can cut.
func splitPrice(a []ref.Val, l *Limits) (uint64, error) {
	s, sep := strLen(a[0]), strLen(a[1])
	pieces := s + 1
	if sep > 0 {
		pieces = s/sep + 1
	}
	if len(a) == 3 {
		if n, ok := a[2].(types.Int); ok && n >= 0 && int64(n) < int64(pieces) {
			pieces = int(n)
		}
	}
	c, err := elemsOut("split's result", pieces, l)
	return c + units(s), err
}

// joinPrice sums the lengths of the strings joined.
func joinPrice(a []ref.Val, l *Limits) (uint64, error) {
	list, ok := a[0].(traits.Lister)
	if !ok {
		return 1, nil
	}
	sep := 0
	if len(a) == 2 {
		sep = strLen(a[1])
	}
	n := size(list)
	total := max(n-1, 0) * sep
	if sep > 0 && total/sep != max(n-1, 0) || total > l.MaxValueBytes {
		return bytesOut("a joined string", l.MaxValueBytes+1, l)
	}
	for it := list.Iterator(); it.HasNext() == types.True; {
		total += strLen(it.Next())
		if total > l.MaxValueBytes {
			break
		}
	}
	c, err := bytesOut("a joined string", total, l)
	return c + uint64(n), err
}

// formatPrice bounds format's output: a clause may print a number of up
// to about seventy characters per character of the format (precision is
// capped at 100), a string argument as it is, and any other argument as
// its quoted form (escapes at most quadruple a string).
func formatPrice(a []ref.Val, l *Limits) (uint64, error) {
	total := 70 * strLen(a[0])
	if list, ok := a[1].(traits.Lister); ok {
		for it := list.Iterator(); it.HasNext() == types.True && total <= l.MaxValueBytes; {
			v := it.Next()
			if s, ok := v.(types.String); ok {
				total += len(s)
			} else {
				total += 4 * deepSize(v, l.MaxValueBytes)
			}
		}
	}
	return bytesOut("a formatted string", total, l)
}

// flattenPrice counts the elements flatten would produce, up to the limit.
func flattenPrice(a []ref.Val, l *Limits) (uint64, error) {
	depth := int64(1)
	if len(a) == 2 {
		if d, ok := a[1].(types.Int); ok {
			depth = int64(d)
		}
	}
	n := flatCount(a[0], depth, l.MaxValueBytes+1)
	return elemsOut("a flattened list", n, l)
}

func flatCount(v ref.Val, depth int64, limit int) int {
	list, ok := v.(traits.Lister)
	if !ok {
		return 1
	}
	if depth < 0 {
		return 0
	}
	n := 0
	for it := list.Iterator(); it.HasNext() == types.True && n < limit; {
		item := it.Next()
		if _, nested := item.(traits.Lister); nested && depth > 0 {
			n += flatCount(item, depth-1, limit-n)
		} else {
			n++
		}
	}
	return n
}

// sortPrice is n log n comparisons.
func sortPrice(a []ref.Val, _ *Limits) (uint64, error) {
	n := uint64(size(a[0]))
	return n*uint64(bits.Len64(n)) + 1, nil
}

// mapInsertPrice: inserting into the mutable map of a comprehension is
// one step; into any other map, a copy of it.
func mapInsertPrice(a []ref.Val, l *Limits) (uint64, error) {
	add := 1
	if len(a) == 2 {
		add = size(a[1])
	}
	if _, mutable := a[0].(traits.MutableMapper); mutable {
		return uint64(add), nil
	}
	return elemsOut("a map", size(a[0])+add, l)
}

// deepMergePrice bounds deepMerge's copies by the entries of both maps,
// nested maps included (deepMerge copies a nested map only where both
// sides hold one), walked until they pass the limit.
func deepMergePrice(a []ref.Val, l *Limits) (uint64, error) {
	limit := l.MaxValueBytes + 1
	n := mapEntries(a[0], limit)
	n += mapEntries(a[1], limit-min(n, limit))
	return elemsOut("a deep-merged map", n, l)
}

// mapEntries counts the entries of v and of the maps nested in its
// values, stopping once the count passes limit; 0 when v is not a map.
func mapEntries(v ref.Val, limit int) int {
	m, ok := v.(traits.Mapper)
	if !ok {
		return 0
	}
	n := 0
	for it := m.Iterator(); it.HasNext() == types.True && n <= limit; {
		n += 1 + mapEntries(m.Get(it.Next()), limit-n)
	}
	return n
}

// jsonMarshalPrice bounds json.marshal's output by the encoded size of
// its argument, walked until it passes the limit.
func jsonMarshalPrice(a []ref.Val, l *Limits) (uint64, error) {
	return bytesOut("json.marshal's result", jsonSize(a[0], l.MaxValueBytes+1), l)
}

// deepSize is about how many bytes v holds, counting a value shared by
// several parents once per parent (as any output made from it would): a
// string's length, 8 per other scalar, 2 per element or entry. The walk
// stops once the size passes limit, so that a small value repeated many
// times over (a list of the same list) costs no more than the limit.
func deepSize(v ref.Val, limit int) int {
	switch v := v.(type) {
	case types.String:
		return len(v)
	case types.Bytes:
		return len(v)
	case traits.Mapper:
		n := 2
		for it := v.Iterator(); it.HasNext() == types.True && n <= limit; {
			k := it.Next()
			n += 2 + deepSize(k, limit-n) + deepSize(v.Get(k), limit-n)
		}
		return n
	case traits.Lister:
		n := 2
		for it := v.Iterator(); it.HasNext() == types.True && n <= limit; {
			n += 2 + deepSize(it.Next(), limit-n)
		}
		return n
	case *types.Optional:
		if v.HasValue() {
			return deepSize(v.GetValue(), limit)
		}
	}
	return 8
}

// jsonSize is deepSize with strings as JSON writes them: quoted, with
// control characters, <, >, & and invalid UTF-8 as six-character escapes.
func jsonSize(v ref.Val, limit int) int {
	switch v := v.(type) {
	case types.String:
		return jsonStringSize(string(v))
	case types.Bytes:
		return (len(v)+2)/3*4 + 2
	case traits.Mapper:
		n := 2
		for it := v.Iterator(); it.HasNext() == types.True && n <= limit; {
			k := it.Next()
			n += 2 + jsonSize(k, limit-n) + jsonSize(v.Get(k), limit-n)
		}
		return n
	case traits.Lister:
		n := 2
		for it := v.Iterator(); it.HasNext() == types.True && n <= limit; {
			n += 1 + jsonSize(it.Next(), limit-n)
		}
		return n
	case *types.Optional:
		if v.HasValue() {
			return jsonSize(v.GetValue(), limit)
		}
	}
	return 32
}

func jsonStringSize(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 5
			case b == '"' || b == '\\':
				n++
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			n += 5 // \ufffd for one byte
		case r == '\u2028' || r == '\u2029':
			n += 3
		}
		i += w
	}
	return n
}
