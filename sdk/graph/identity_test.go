package graph_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// scopedResolver adds scopes to the typed test resolver: Namespace is
// cluster-scoped, everything else it knows is namespaced.
type scopedResolver struct{ graph.StaticResolver }

func (r scopedResolver) IsNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	if _, err := r.ResolveSchema(gvk); err != nil {
		return false, err
	}
	return gvk.Kind != "Namespace", nil
}

var _ graph.ScopeResolver = scopedResolver{}

func scopedOptions(t *testing.T) graph.Options {
	return graph.Options{Resolver: scopedResolver{typedOptions(t).Resolver.(graph.StaticResolver)}}
}

const clusterSchema = "apiVersion: v1alpha1\nkind: App\nscope: Cluster\nspec:\n  name: string | default=\"app\"\n  regions: \"[]string\""

func nsResource(id, namespace string) string {
	md := "name: " + id
	if namespace != "" {
		md += "\n      namespace: " + namespace
	}
	return "- id: " + id + "\n  template:\n    apiVersion: v1\n    kind: Namespace\n    metadata:\n      " + md + "\n"
}

func TestIdentityChecks(t *testing.T) {
	long := strings.Repeat("a", 64)
	runFailCases(t, map[string]failCase{
		"namespaced child of a cluster-scoped instance without a namespace": {schema: clusterSchema, resources: "resources:\n" + cm("a", "", ""),
			opts: scopedOptions(t), kind: graph.ErrInvalid, want: `resource "a": metadata.namespace: ConfigMap is namespaced and the instance is cluster-scoped: the namespace must be set`},
		"cluster-scoped child with a namespace": {resources: "resources:\n" + nsResource("ns", "x"),
			opts: scopedOptions(t), kind: graph.ErrInvalid, want: `resource "ns": metadata.namespace: Namespace is cluster-scoped and must not set a namespace`},
		"two resources render one object": {resources: "resources:\n" + cm("a", "", "") + strings.Replace(cm("b", "", ""), "name: b", "name: a", 1),
			kind: graph.ErrInvalid, want: `resource "b": metadata.name: resource "a" already renders the same object (v1 ConfigMap /a)`},
		"id too long for a label": {resources: "resources:\n" + cm("a"+long, "", ""),
			kind: graph.ErrInvalid, want: `id: the id labels the objects it creates: must be no more than 63 characters`},
		"iterator not in the name": {resources: "resources:\n" + cm("a", "forEach: [{r: '${schema.spec.regions}'}]", ""),
			kind: graph.ErrInvalid, want: `resource "a": metadata.name: forEach iterator "r" must be used in metadata.name or metadata.namespace`},
	})
	rgd := parseRGD(t, rgdDoc("", "resources:\n"+cm("a", "", "")))
	rgd.Name = long
	_, err := graph.Compile(rgd, graph.Options{})
	require.ErrorIs(t, err, graph.ErrInvalid)
	assert.Contains(t, err.Error(), "metadata.name: the name labels every object the graph creates: must be no more than 63 bytes")
}

func TestIdentityChecksAccept(t *testing.T) {
	for name, tt := range map[string]struct{ schema, resources string }{
		"cluster-scoped instance, namespace set": {clusterSchema, "resources:\n" + strings.Replace(cm("a", "", ""), "name: a", "name: a\n      namespace: ${schema.spec.name}", 1)},
		"cluster-scoped instance, cluster child": {clusterSchema, "resources:\n" + nsResource("ns", "")},
		"same name, different kinds":             {"", "resources:\n" + cm("a", "", "") + strings.Replace(nsResource("b", ""), "name: b", "name: a", 1)},
		"same name, different namespaces":        {"", "resources:\n" + cm("a", "", "") + strings.Replace(cm("b", "", ""), "name: b", "name: a\n      namespace: other", 1)},
		"iterator in the name":                   {"", "resources:\n" + strings.Replace(cm("a", "forEach: [{r: '${schema.spec.regions}'}]", ""), "name: a", "name: a-${r}", 1)},
	} {
		_, err := graph.Compile(parseRGD(t, rgdDoc(tt.schema, tt.resources)), scopedOptions(t))
		assert.NoError(t, err, name)
	}
	// Without a ScopeResolver the scope is unknown: nothing is refused.
	_, err := graph.Compile(parseRGD(t, rgdDoc(clusterSchema, "resources:\n"+cm("a", "", ""))), typedOptions(t))
	assert.NoError(t, err)
}
