package spoke

import (
	"sync"
	"sync/atomic"
)

// Decoding an object gives every string its own copy: the same label keys,
// kinds, condition types and map keys are held once per cached object.
// The cache transform (trim.go) replaces them by one shared copy from a
// table. The table is bounded: strings unique to one object that reach it
// must not grow it without limit. When it is full it is replaced by an
// empty one; strings already shared stay shared, and the new table fills
// with what is common now.

// Bounds of the intern table.
const (
	maxInterned    = 8192
	maxInternedLen = 128
)

// internTable is one generation of the table.
type internTable struct {
	strings sync.Map // string -> string
	n       atomic.Int64
}

var interned atomic.Pointer[internTable]

func init() { interned.Store(&internTable{}) }

// intern returns the shared copy of s.
func intern(s string) string {
	v, _ := internBoxed(s).(string)
	return v
}

// internBoxed returns the shared copy of s in an interface: a string in an
// interface (as in unstructured content) is a pointer to a box of its own,
// which the shared copy shares too.
func internBoxed(s string) any {
	if s == "" || len(s) > maxInternedLen {
		return s
	}
	t := interned.Load()
	if v, ok := t.strings.Load(s); ok {
		return v
	}
	if t.n.Add(1) > maxInterned {
		interned.CompareAndSwap(t, &internTable{})
		t = interned.Load()
		t.n.Add(1)
	}
	v, _ := t.strings.LoadOrStore(s, s)
	return v
}

// internMap rebuilds a string map with interned keys, and values interned
// where internValue(key) says so (values that repeat across objects).
func internMap(m map[string]string, internValue func(key string) bool) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if internValue(k) {
			v = intern(v)
		}
		out[intern(k)] = v
	}
	return out
}

// internJSON rebuilds a decoded JSON value (unstructured content) with
// interned map keys, and interned string values under the keys
// repeatedValue names.
func internJSON(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[intern(k)] = internJSON(e, k)
		}
		return out
	case []any:
		for i, e := range t {
			t[i] = internJSON(e, key)
		}
		return t
	case string:
		if repeatedValue[key] {
			return internBoxed(t)
		}
		return v
	default:
		return v
	}
}

// repeatedValue names the keys whose string values are mostly the same
// across objects: kinds, namespaces, condition types, reasons and
// messages, states, finalizers, timestamps.
var repeatedValue = map[string]bool{
	"apiVersion": true, "kind": true, "namespace": true, "type": true, "status": true,
	"reason": true, "message": true, "state": true, "finalizers": true,
	// Seconds: many objects are written in the same one.
	"creationTimestamp": true, "lastTransitionTime": true,
}
