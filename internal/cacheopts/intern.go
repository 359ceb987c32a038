package cacheopts

import (
	"encoding/json"
	"sync"
	"sync/atomic"
)

// Decoding an object gives every string its own copy: the same label keys,
// kinds, condition types and map keys are held once per cached object.
// The cache transform (trim.go) replaces them by one shared copy from a
// table. Likewise the items of lists that hold only scalars, such as an
// instance's conditions, which many instances have alike: the cache's
// objects are read-only (client-go's rule; readers get deep copies), so
// they may share them. A table is bounded: what is unique to one object
// must not grow it without limit. When one is full it is replaced by an
// empty one; what is shared stays shared, and the new table fills with
// what is common now.

// Bounds of the intern tables.
const (
	maxInterned    = 8192
	maxInternedLen = 128 // of a string
	maxLeafLen     = 512 // of a list item, as JSON
)

// internTable is one generation of a table.
type internTable struct {
	values sync.Map // string -> shared value
	n      atomic.Int64
}

// pool is a table that starts over when full.
type pool struct{ current atomic.Pointer[internTable] }

func newPool() *pool {
	p := &pool{}
	p.current.Store(&internTable{})
	return p
}

// share returns the value shared under key, storing v there if none is.
func (p *pool) share(key string, v any) any {
	t := p.current.Load()
	if got, ok := t.values.Load(key); ok {
		return got
	}
	if t.n.Add(1) > maxInterned {
		p.current.CompareAndSwap(t, &internTable{})
		t = p.current.Load()
		t.n.Add(1)
	}
	got, _ := t.values.LoadOrStore(key, v)
	return got
}

var (
	strs   = newPool() // strings
	leaves = newPool() // list items that hold only scalars, by their JSON
)

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
	return strs.share(s, s)
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
// interned map keys, interned string values under the keys repeatedValue
// names, and shared list items where they hold only scalars (internLeaf). It never
// changes a map it did not make, as those may be shared.
func internJSON(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[intern(k)] = internJSON(e, k)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = internJSON(e, key)
			if m, ok := out[i].(map[string]any); ok {
				out[i] = internLeaf(m)
			}
		}
		return out
	case string:
		if repeatedValue[key] {
			return internBoxed(t)
		}
		return v
	default:
		return v
	}
}

// internLeaf returns the shared map equal to m if m holds only strings,
// integers, booleans and nulls (a float may print as an integer would, and
// must not be shared with one).
func internLeaf(m map[string]any) any {
	for _, e := range m {
		switch e.(type) {
		case string, int64, bool, nil:
		default:
			return m
		}
	}
	b, err := json.Marshal(m) // keys sorted: equal maps, equal JSON
	if err != nil || len(b) > maxLeafLen {
		return m
	}
	return leaves.share(string(b), m)
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
