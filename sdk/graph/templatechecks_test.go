package graph_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

func crdResource(id, metadataName, scope string) string {
	return "- id: " + id + "\n  template:\n    apiVersion: apiextensions.k8s.io/v1\n    kind: CustomResourceDefinition\n" +
		"    metadata: {name: '" + metadataName + "'}\n    spec:\n      group: example.com\n      names: {kind: Thing, plural: things}\n" +
		"      scope: '" + scope + "'\n      versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n"
}

func selectorRef(id, selector string) string {
	return "- id: " + id + "\n  externalRef:\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      selector: " + selector + "\n"
}

// Rules kro v0.9.4 applies to templates and externalRefs, which fleetgraph
// applies too.
func TestKroTemplateRules(t *testing.T) {
	runFailCases(t, map[string]failCase{
		"a kro.run label": {resources: "resources:\n" + strings.Replace(cm("a", "", ""), "name: a", "name: a\n      labels: {kro.run/owned: 'true', app: x}", 1),
			kind: graph.ErrInvalid, want: `resource "a": metadata.labels.kro.run/owned: labels starting with "kro.run/" are kro's own: a template may not set them`},
		"an expression in a CRD's spec": {resources: "resources:\n" + crdResource("crd", "things.example.com", "${schema.spec.name}"),
			kind: graph.ErrInvalid, want: `resource "crd": spec.scope: ${schema.spec.name}: a CustomResourceDefinition template may use expressions only in metadata`},
		"an unknown selector field": {resources: "resources:\n" + selectorRef("pods", "{matchLabel: {app: x}}"),
			kind: graph.ErrInvalid, want: `resource "pods": externalRef.metadata.selector.matchLabel: unknown field "matchLabel" of a label selector (matchLabels, matchExpressions)`},
		"a label value that is not a string": {resources: "resources:\n" + selectorRef("pods", "{matchLabels: {app: 1}}"),
			kind: graph.ErrInvalid, want: `resource "pods": externalRef.metadata.selector.matchLabels.app: the number 1 where a string belongs`},
		"a requirement without an operator": {resources: "resources:\n" + selectorRef("pods", "{matchExpressions: [{key: app, values: [x]}]}"),
			kind: graph.ErrInvalid, want: `resource "pods": externalRef.metadata.selector.matchExpressions[0].operator: required`},
		"a selector that is plain text": {resources: "resources:\n" + selectorRef("pods", "app=x"),
			kind: graph.ErrInvalid, want: `resource "pods": externalRef.metadata.selector: must be a label selector (matchLabels, matchExpressions) or one ${} expression`},
	})

	ok := "resources:\n" + crdResource("crd", "${schema.spec.name}.example.com", "Namespaced") +
		selectorRef("a", "{matchLabels: {app: '${schema.spec.name}'}, matchExpressions: [{key: tier, operator: In, values: ['${schema.spec.name}']}]}")
	g, err := graph.Compile(parseRGD(t, rgdDoc("", ok)), graph.Options{})
	require.NoError(t, err)
	assert.Empty(t, g.Extensions)

	// kro v0.9.4 takes a selector computed by one expression.
	whole := "resources:\n" + selectorRef("a", "'${ {\"matchLabels\": {\"app\": schema.spec.name}} }'")
	g, err = graph.Compile(parseRGD(t, rgdDoc("", whole)), graph.Options{Strict: true})
	require.NoError(t, err)
	assert.Empty(t, g.Extensions)
}

// As in kro, a collection's readyWhen reads each item as each, never the
// collection's own id.
func TestCollectionReadyWhenReadsEach(t *testing.T) {
	loop := "forEach: [{r: '${schema.spec.regions}'}]\nreadyWhen: ['%s']"
	runFailCases(t, map[string]failCase{
		"the collection's own id": {resources: "resources:\n" + named("a", strings.Replace(loop, "%s", "${a.metadata.name != \"\"}", 1), "${r}"),
			kind: graph.ErrReference, want: `resource "a": readyWhen[0]: ${a.metadata.name != ""}: readyWhen may only reference each, not "a"`},
	})
	_, err := graph.Compile(parseRGD(t, rgdDoc("", "resources:\n"+named("a", strings.Replace(loop, "%s", "${each.metadata.name != \"\"}", 1), "${r}"))), graph.Options{})
	assert.NoError(t, err)
}

// kro refuses each in the readyWhen of an externalRef by selector (and its
// controller binds nothing else there): fleetgraph reads each item as each,
// as for forEach, and lists it as an extension.
func TestEachInAnExternalCollectionsReadyWhenIsAnExtension(t *testing.T) {
	ref := "- id: pods\n  readyWhen: ['${each.metadata.name != \"\"}']\n  externalRef: {apiVersion: v1, kind: Pod, metadata: {selector: {matchLabels: {app: x}}}}\n"
	rgd := parseRGD(t, rgdDoc("", "resources:\n"+ref))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	assert.Equal(t, []graph.Extension{{ResourceID: "pods", Path: "readyWhen[0]", Feature: "each in the readyWhen of an externalRef by selector"}}, g.Extensions)
	_, err = graph.Compile(rgd, graph.Options{Strict: true})
	assert.ErrorIs(t, err, graph.ErrExtension)
}
