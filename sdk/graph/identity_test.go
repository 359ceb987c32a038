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
		"a cluster-scoped instance has no namespace to read": {schema: clusterSchema, resources: "resources:\n" + strings.Replace(cm("a", "", ""), "name: a", "name: a\n      namespace: ${schema.metadata.namespace}", 1),
			opts: scopedOptions(t), kind: graph.ErrExpression, want: `resource "a": metadata.namespace: ${schema.metadata.namespace}: undefined field 'namespace'`},
		"cluster-scoped child with a namespace": {resources: "resources:\n" + nsResource("ns", "x"),
			opts: scopedOptions(t), kind: graph.ErrInvalid, want: `resource "ns": metadata.namespace: Namespace is cluster-scoped and must not set a namespace`},
		"two resources render one object": {resources: "resources:\n" + cm("a", "", "") + strings.Replace(cm("b", "", ""), "name: b", "name: a", 1),
			opts: graph.Options{RefuseSameObjects: true},
			kind: graph.ErrInvalid, want: `resource "b": metadata.name: resource "a" already renders the same object (ConfigMap "a" in the instance's namespace): each would overwrite the other`},
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

// named is cm with metadata.name (and more metadata lines) replaced.
func named(id, entry, name string) string {
	return strings.Replace(cm(id, entry, ""), "name: "+id, "name: "+name, 1)
}

// Two resources that render one object, written alike, are accepted as
// kro accepts them, with a warning naming both; a platform that sets
// Options.RefuseSameObjects refuses them. Each case says what the warning
// and the refusal name.
func TestSameObjectThroughTheSameExpression(t *testing.T) {
	const same = `resource "a" renders the same object (ConfigMap "${schema.spec.name}" in the instance's namespace)`
	const refused = `resource "a" already renders the same object (ConfigMap "${schema.spec.name}" in the instance's namespace): each would overwrite the other`
	tests := map[string]struct{ resources, warning, refusal string }{
		"same name expression": {"resources:\n" + named("a", "", "${schema.spec.name}") + named("b", "", "${schema.spec.name}"),
			`resource "b": metadata.name: ${schema.spec.name}: ` + same + ": when both are included", `resource "b": metadata.name: ${schema.spec.name}: ` + refused},
		"same expression, other spacing": {"resources:\n" + named("a", "", "${schema.spec.name}") + named("b", "", "'${ schema.spec.name }'"),
			`resource "b": metadata.name: ${ schema.spec.name }: resource "a" renders the same object`, `resource "b": metadata.name: ${ schema.spec.name }: resource "a" already renders the same object`},
		"same expression, same namespace expression": {"resources:\n" +
			named("a", "", "${schema.spec.name}\n      namespace: ${schema.spec.name}") + named("b", "", "${schema.spec.name}\n      namespace: ${schema.spec.name}"),
			`resource "a" renders the same object (ConfigMap "${schema.spec.name}" in namespace "${schema.spec.name}")`, `resource "a" already renders the same object (ConfigMap "${schema.spec.name}" in namespace "${schema.spec.name}")`},
		"the instance's namespace, written or not": {"resources:\n" +
			named("a", "", "x-${schema.spec.name}") + named("b", "", "x-${schema.spec.name}\n      namespace: ${schema.metadata.namespace}"),
			`resource "b": metadata.name: x-${schema.spec.name}: resource "a" renders`, `resource "b": metadata.name: x-${schema.spec.name}: resource "a" already renders`},
		"one of them conditional": {"resources:\n" + named("a", "", "${schema.spec.name}") + named("b", "includeWhen: ['${schema.spec.enabled}']", "${schema.spec.name}"),
			same + "; their includeWhen do not keep them apart", refused + "; their includeWhen do not keep them apart"},
		"the same condition": {"resources:\n" + named("a", "includeWhen: ['${schema.spec.enabled}']", "${schema.spec.name}") +
			named("b", "includeWhen: ['${schema.spec.enabled}']", "${schema.spec.name}"), same, refused},
		"the same forEach": {"resources:\n" + named("a", "forEach: [{r: '${schema.spec.regions}'}]", "${r}") +
			named("b", "forEach: [{r: '${schema.spec.regions}'}]", "${r}"),
			`resource "b": metadata.name: ${r}: resource "a" renders the same object`, `resource "b": metadata.name: ${r}: resource "a" already renders the same object`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			rgd := parseRGD(t, rgdDoc("", tt.resources))
			g, err := graph.Compile(rgd, graph.Options{})
			require.NoError(t, err, "kro accepts it")
			require.Len(t, g.Warnings, 1)
			assert.Contains(t, g.Warnings[0].String(), tt.warning)

			_, err = graph.Compile(rgd, graph.Options{RefuseSameObjects: true})
			require.ErrorIs(t, err, graph.ErrInvalid)
			assert.Contains(t, err.Error(), tt.refusal)
			assert.Contains(t, err.Error(), "(Options.RefuseSameObjects)")
		})
	}
}

// Templates whose objects can differ raise nothing, even under
// Options.RefuseSameObjects.
func TestSameObjectRefusesOnlyWhatCannotWork(t *testing.T) {
	secret := func(id, name string) string {
		return strings.Replace(named(id, "", name), "kind: ConfigMap", "kind: Secret", 1)
	}
	for name, resources := range map[string]string{
		"different kinds":       named("a", "", "${schema.spec.name}") + secret("b", "${schema.spec.name}"),
		"different namespaces":  named("a", "", "${schema.spec.name}\n      namespace: one") + named("b", "", "${schema.spec.name}\n      namespace: two"),
		"a literal prefix":      named("a", "", "a-${schema.spec.name}") + named("b", "", "b-${schema.spec.name}"),
		"different expressions": named("a", "", "${schema.spec.name}") + named("b", "", "${schema.spec.name + '-b'}"),
		"different forEach":     named("a", "forEach: [{r: '${schema.spec.regions}'}]", "${r}") + named("b", "forEach: [{r: '${[\"x\"]}'}]", "${r}"),
		"exclusive includeWhen": named("a", "includeWhen: ['${schema.spec.enabled}']", "${schema.spec.name}") +
			named("b", "includeWhen: ['${!schema.spec.enabled}']", "${schema.spec.name}"),
		"includeWhen each with its own condition": named("a", "includeWhen: ['${schema.spec.replicas == 1}']", "${schema.spec.name}") +
			named("b", "includeWhen: ['${schema.spec.replicas == 2}']", "${schema.spec.name}"),
		"two externalRefs": "- id: a\n  externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.spec.name}'}}\n" +
			"- id: b\n  externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.spec.name}'}}\n",
	} {
		opts := scopedOptions(t)
		opts.RefuseSameObjects = true
		g, err := graph.Compile(parseRGD(t, rgdDoc("", "resources:\n"+resources)), opts)
		require.NoError(t, err, name)
		assert.Empty(t, g.Warnings, name)
	}
}
