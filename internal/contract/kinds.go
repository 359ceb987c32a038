package contract

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// GraphKinds returns the kinds g's own children can have (external
// references excluded), sorted and without duplicates.
func GraphKinds(g *graph.Graph) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, n := range g.Nodes {
		if !n.External {
			out = append(out, n.GVK)
		}
	}
	return SortedKinds(out)
}

// EncodeChildKinds is the value of AnnotationChildKinds for kinds.
func EncodeChildKinds(kinds []schema.GroupVersionKind) string {
	parts := make([]string, 0, len(kinds))
	for _, k := range SortedKinds(kinds) {
		parts = append(parts, k.GroupVersion().String()+"/"+k.Kind)
	}
	return strings.Join(parts, ",")
}

// ChildKinds parses the instance's AnnotationChildKinds; entries that do
// not parse are skipped.
func ChildKinds(inst *unstructured.Unstructured) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, part := range strings.Split(inst.GetAnnotations()[AnnotationChildKinds], ",") {
		i := strings.LastIndex(part, "/")
		if i <= 0 || i == len(part)-1 {
			continue
		}
		out = append(out, schema.FromAPIVersionAndKind(part[:i], part[i+1:]))
	}
	return SortedKinds(out)
}

func SortedKinds(kinds []schema.GroupVersionKind) []schema.GroupVersionKind {
	kinds = slices.Clone(kinds)
	slices.SortFunc(kinds, CompareKinds)
	return slices.Compact(kinds)
}

func CompareKinds(a, b schema.GroupVersionKind) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Kind, b.Kind))
}
