package graph

import "sort"

// sortedKeys returns m's keys in order. Compile walks every map (template
// objects, status fields, variables, object fields) in key order, so that
// what it reports, and in what order, does not depend on Go's map order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
