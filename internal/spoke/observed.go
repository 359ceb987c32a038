package spoke

import (
	"encoding/json"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// The apply memory keeps, per child, the API server's answer to our last
// apply: dependents and readyWhen read it when the child is not applied
// again. Held as decoded JSON (nested maps), it was most of the hub's heap
// per instance (a Deployment's answer costs tens of KiB as maps, a few as
// JSON), so it is kept encoded and decoded when a reconcile reuses it, which
// also hands every reconcile a copy of its own.

// encodeObserved is obj as compact JSON; nil if it cannot be encoded (the
// child is then applied again next time).
func encodeObserved(obj map[string]any) []byte {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	return b
}

// decodeObserved undoes encodeObserved, with integers as int64 as the API
// machinery decodes them, so that CEL sees the same types as after an apply.
func decodeObserved(b []byte) (map[string]any, bool) {
	if b == nil {
		return nil, false
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(b, &obj); err != nil {
		return nil, false
	}
	return obj, true
}
