package spoke

import "strconv"

// atLeast reports whether obj, an object decoded from JSON (maps, slices,
// strings, numbers, booleans and nils), would take at least limit bytes
// written back as JSON, roughly: string escapes and float digits are not
// counted exactly. The walk stops as soon as the answer is yes, so it
// visits at most about limit values whatever obj's size, and allocates
// nothing.
func atLeast(obj map[string]any, limit int) bool {
	w := sizeWalk{left: limit}
	return w.object(obj)
}

// sizeWalk counts down the bytes left before its limit.
type sizeWalk struct {
	left int
	// visits counts the values walked (for tests of the bound).
	visits int
}

// object walks a JSON object, and reports whether the limit was reached.
func (w *sizeWalk) object(m map[string]any) bool {
	if w.take(2) { // {}
		return true
	}
	for k, v := range m {
		if w.take(len(k)+4) || w.value(v) { // "k":,
			return true
		}
	}
	return false
}

// array walks a JSON array, and reports whether the limit was reached.
func (w *sizeWalk) array(xs []any) bool {
	if w.take(2) { // []
		return true
	}
	for _, v := range xs {
		if w.take(1) || w.value(v) { // ,
			return true
		}
	}
	return false
}

// value walks one JSON value, and reports whether the limit was reached.
func (w *sizeWalk) value(v any) bool {
	w.visits++
	switch x := v.(type) {
	case map[string]any:
		return w.object(x)
	case []any:
		return w.array(x)
	case string:
		return w.take(len(x) + 2)
	case int64:
		return w.take(intLen(x))
	case bool:
		return w.take(5)
	case nil:
		return w.take(4)
	default: // float64, and numbers of other types
		return w.take(8)
	}
}

// take counts n bytes, and reports whether the limit was reached.
func (w *sizeWalk) take(n int) bool {
	w.left -= n
	return w.left <= 0
}

// intLen is the length of i written in decimal.
func intLen(i int64) int {
	var buf [20]byte
	return len(strconv.AppendInt(buf[:0], i, 10))
}
