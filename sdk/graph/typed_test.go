package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

func deployment(id, entry, spec string) string {
	out := "- id: " + id + "\n"
	if entry != "" {
		out += indent(entry, "  ") + "\n"
	}
	out += "  template:\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: " + id + "\n    spec:\n" + indent(spec, "      ") + "\n"
	return out
}

const podSpec = `selector: {matchLabels: {app: x}}
template:
  metadata: {labels: {app: x}}
  spec:
    containers: [{name: c, image: nginx}]`

func TestTypedChecksAgainstKindSchemas(t *testing.T) {
	typed := typedOptions(t)
	runFailCases(t, map[string]failCase{
		"string into an integer field": {resources: "resources:\n" + deployment("web", "", "replicas: ${schema.spec.name}\n"+podSpec), opts: typed,
			kind: graph.ErrType, want: `resource "web": spec.replicas: ${schema.spec.name}: expression returns string but the field is int`},
		"list into a string field": {resources: "resources:\n" + cm("a", "", "x: ${schema.spec.regions}"), opts: typed,
			kind: graph.ErrType, want: `resource "a": data.x: ${schema.spec.regions}: expression returns list(string) but the field is string`},
		"text into an integer field": {resources: "resources:\n" + deployment("web", "", "replicas: n-${schema.spec.name}\n"+podSpec), opts: typed,
			kind: graph.ErrType, want: `resource "web": spec.replicas: n-${schema.spec.name}: a string does not fit a field of type int`},
		"unknown template field": {resources: "resources:\n" + deployment("web", "", "replicaz: 3\n"+podSpec), opts: typed,
			kind: graph.ErrInvalid, want: `resource "web": spec.replicaz: unknown field "replicaz"`},
		"undefined field of a child": {resources: "resources:\n" + deployment("web", "", podSpec) + cm("a", "", "x: ${string(web.spec.replicaz)}"), opts: typed,
			kind: graph.ErrExpression, want: `resource "a": data.x: ${string(web.spec.replicaz)}: undefined field 'replicaz'`},
		"readyWhen typed": {resources: "resources:\n" + deployment("web", "readyWhen: ['${web.status.readyReplicas == \"3\"}']", podSpec), opts: typed,
			kind: graph.ErrExpression, want: `resource "web": readyWhen[0]: ${web.status.readyReplicas == "3"}: found no matching overload for '_==_' applied to '(int, string)'`},
		"unknown kind": {resources: "resources:\n- id: w\n  template: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}", opts: typed,
			kind: graph.ErrSchemaNotFound, want: `resource "w": kind: no schema for example.com/v1, Kind=Widget`},
	})
}

func TestTypedCompileAcceptsTheTestdata(t *testing.T) {
	opts := typedOptions(t)
	opts.DynamicUnknownKinds = true // Ingress, NetworkPolicy, RBAC and PDB are not in the embedded documents
	for _, name := range []string{"webapp", "webapp-ingress", "worker-pool", "feature-toggles", "external-refs", "custom-types", "tenant", "status-projections", "database"} {
		t.Run(name, func(t *testing.T) {
			_, err := graph.Compile(loadRGD(t, name), opts)
			require.NoError(t, err)
		})
	}
}

func TestTypedStatusFieldsGetTheirSchema(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc(`apiVersion: v1alpha1
kind: App
status:
  available: ${web.status.availableReplicas}
  selector: ${web.spec.selector}
  images: ${web.spec.template.spec.containers.map(c, c.image)}
  created: ${web.metadata.creationTimestamp}`, "resources:\n"+deployment("web", "", podSpec))), typedOptions(t))
	require.NoError(t, err)
	props := g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties
	assert.Equal(t, "integer", props["available"].Type)
	assert.Equal(t, "object", props["selector"].Type)
	assert.Equal(t, "object", props["selector"].Properties["matchLabels"].Type)
	assert.Equal(t, "string", props["selector"].Properties["matchLabels"].AdditionalProperties.Schema.Type)
	assert.Equal(t, "array", props["images"].Type)
	assert.Equal(t, "string", props["images"].Items.Schema.Type)
	assert.Equal(t, "string", props["created"].Type)
}

func TestUnknownKindsCanBeDynamic(t *testing.T) {
	opts := typedOptions(t)
	opts.DynamicUnknownKinds = true
	res := "resources:\n- id: w\n  template: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, spec: {anything: 1}}\n" +
		cm("a", "", "x: ${w.spec.whatever}")
	_, err := graph.Compile(parseRGD(t, rgdDoc("", res)), opts)
	require.NoError(t, err)
}

// unreachableResolver is an API server that does not answer.
type unreachableResolver struct{}

func (unreachableResolver) ResolveSchema(schema.GroupVersionKind) (*spec.Schema, error) {
	return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
}

// A resolver that cannot be reached is no verdict on the RGD: the error says
// compile again later, even when unknown kinds may be dynamic.
func TestAnUnreachableResolverIsNotAnInvalidRGD(t *testing.T) {
	res := "resources:\n" + cm("a", "", "x: y")
	_, err := graph.Compile(parseRGD(t, rgdDoc("", res)), graph.Options{Resolver: unreachableResolver{}, DynamicUnknownKinds: true})
	require.Error(t, err)
	assert.ErrorIs(t, err, graph.ErrSchemaUnavailable)
	assert.NotErrorIs(t, err, graph.ErrSchemaNotFound)
}

// With a resolver, plain values are checked against the kind's schema
// too, as the API server would check them.
func TestTypedChecksLiteralValues(t *testing.T) {
	typed := typedOptions(t)
	runFailCases(t, map[string]failCase{
		"string literal into an integer field": {resources: "resources:\n" + deployment("web", "", "replicas: three\n"+podSpec), opts: typed,
			kind: graph.ErrType, want: `resource "web": spec.replicas: the string "three" does not fit a field of type int`},
		"fraction into an integer field": {resources: "resources:\n" + deployment("web", "", "replicas: 1.5\n"+podSpec), opts: typed,
			kind: graph.ErrType, want: `resource "web": spec.replicas: the number 1.5 does not fit a field of type int`},
		"list into an object field": {resources: "resources:\n" + deployment("web", "", "selector: [a]\ntemplate: {}"), opts: typed,
			kind: graph.ErrType, want: `resource "web": spec.selector: a list does not fit a field of type`},
		"bytes into a string field, as kro refuses": {resources: "resources:\n" + cm("a", "", "x: ${hash.md5(schema.spec.name)}"), opts: typed,
			kind: graph.ErrType, want: `resource "a": data.x: ${hash.md5(schema.spec.name)}: expression returns bytes but the field is string`},
		"number into a string map": {resources: "resources:\n" + cm("a", "", "port: 80"), opts: typed,
			kind: graph.ErrType, want: `resource "a": data.port: the number 80 does not fit a field of type string`},
	})
	ok := "resources:\n" + deployment("web", "", "replicas: 3\nminReadySeconds: null\n"+podSpec) +
		"- id: svc\n  template:\n    apiVersion: v1\n    kind: Service\n    metadata: {name: svc}\n    spec:\n      ports: [{port: 80, targetPort: http}, {port: 81, targetPort: 8081}]\n"
	_, err := graph.Compile(parseRGD(t, rgdDoc("", ok)), typed)
	assert.NoError(t, err, "whole numbers, null and int-or-string take what the API server takes")
}

// As in kro, a field an object's schema does not list but whose schema
// preserves unknown fields reads as dyn.
func TestPreservedUnknownFieldsAreDyn(t *testing.T) {
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	s := &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
		"apiVersion": {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
		"kind":       {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
		"metadata":   {SchemaProps: spec.SchemaProps{Type: []string{"object"}}},
		"status": {
			SchemaProps:      spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{"phase": {SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}},
			VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}},
		},
	}}}
	opts := graph.Options{Resolver: graph.StaticResolver{widget: s}, DynamicUnknownKinds: true}
	res := "resources:\n- id: w\n  template: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}\n" +
		cm("a", "", "x: ${w.status.phase}\nport: ${string(w.status.endpoint.port)}")
	g, err := graph.Compile(parseRGD(t, rgdDoc("", res)), opts)
	require.NoError(t, err)
	obj, err := g.Node("a").Render(context.Background(), graph.Values{
		"schema": instance("x", map[string]any{}),
		"w":      map[string]any{"status": map[string]any{"phase": "Up", "endpoint": map[string]any{"port": int64(80)}}},
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"x": "Up", "port": "80"}, obj.Object["data"])

	_, err = graph.Compile(parseRGD(t, rgdDoc("", strings.Replace(res, "w.status.phase", "w.metadata.phase", 1))), opts)
	assert.NoError(t, err, "metadata is a free-form map here")
	_, err = graph.Compile(parseRGD(t, rgdDoc("", strings.Replace(res, "w.status.phase", "string(w.status.phase.size)", 1))), opts)
	assert.ErrorIs(t, err, graph.ErrExpression, "a listed string field stays typed")
}

// pod is a Pod resource with one container whose fields are given.
func pod(id, container string) string {
	return "- id: " + id + "\n  template:\n    apiVersion: v1\n    kind: Pod\n    metadata:\n      name: " + id +
		"\n    spec:\n      containers:\n      - name: c\n        image: nginx\n" + indent(container, "        ") + "\n"
}

// As kro v0.9.4, an object fills an object field only with fields the
// field has, a map only if its values fit every field, an object fills a
// map only if every field fits the map's values; an int does not fill a
// number field and null fills only objects.
func TestTypedObjectsFitFieldByField(t *testing.T) {
	typed := typedOptions(t)
	schemaWith := func(fields string) string {
		return "apiVersion: v1alpha1\nkind: App\ntypes:\n  C:\n    name: string\n    img: string\nspec:\n  name: string\n" + indent(fields, "  ")
	}
	runFailCases(t, map[string]failCase{
		"an object with a field the target lacks": {schema: schemaWith("res:\n  cpu: string"), resources: "resources:\n" + pod("p", "resources: ${schema.spec.res}"), opts: typed,
			kind: graph.ErrType, want: `resource "p": spec.containers[0].resources: ${schema.spec.res}: expression returns fg__schema.spec.res but the field is ` +
				`fg__kind.core.v1.Pod.spec.containers@items.resources: field "cpu" is not a field of fg__kind.core.v1.Pod.spec.containers@items.resources`},
		"a list of such objects": {schema: schemaWith("cs: \"[]C\""), resources: "resources:\n" + strings.Replace(pod("p", ""), "containers:\n      - name: c\n        image: nginx\n", "containers: ${schema.spec.cs}\n", 1), opts: typed,
			kind: graph.ErrType, want: `field "img" is not a field of fg__kind.core.v1.Pod.spec.containers@items`},
		"a map whose values do not fit every field": {schema: schemaWith("sc: \"map[string]string\""), resources: "resources:\n" + strings.Replace(pod("p", ""), "containers:", "securityContext: ${schema.spec.sc}\n      containers:", 1), opts: typed,
			kind: graph.ErrType, want: `resource "p": spec.securityContext: ${schema.spec.sc}: expression returns map(string, string) but the field is fg__kind.core.v1.Pod.spec.securityContext: its values (string) do not fit field "fsGroup": string is not int`},
		"an object whose fields do not fit a map": {schema: schemaWith("obj:\n  a: integer"), resources: "resources:\n" + strings.Replace(cm("a", "", ""), "name: a", "name: a\n    data: ${schema.spec.obj}", 1), opts: typed,
			kind: graph.ErrType, want: `resource "a": data: ${schema.spec.obj}: expression returns fg__schema.spec.obj but the field is map(string, string): field "a" does not fit the map's values (string): int is not string`},
		"null into a string": {resources: "resources:\n" + cm("a", "", "x: ${null}"), opts: typed,
			kind: graph.ErrType, want: `resource "a": data.x: ${null}: expression returns null_type but the field is string`},
	})
	for name, tt := range map[string]struct{ schema, resources string }{
		"an object with a subset of the fields": {schemaWith("res:\n  limits: \"map[string]string\""), pod("p", "resources: ${schema.spec.res}")},
		"a map literal into a selector, as kro": {"", deployment("web", "", strings.Replace(podSpec, "selector: {matchLabels: {app: x}}", `selector: '${ {"matchLabels": {"app": "x"}} }'`, 1))},
		"a free-form object into an object":     {schemaWith("sc: object"), strings.Replace(pod("p", ""), "containers:", "securityContext: ${schema.spec.sc}\n      containers:", 1)},
		"one kind's part into another's":        {"", pod("a", "") + deployment("web", "", "selector: {matchLabels: {app: x}}\ntemplate:\n  metadata: {labels: {app: x}}\n  spec: ${a.spec}")},
		"null into an object":                   {"", strings.Replace(pod("p", ""), "containers:", "securityContext: ${null}\n      containers:", 1)},
	} {
		_, err := graph.Compile(parseRGD(t, rgdDoc(tt.schema, "resources:\n"+tt.resources)), typed)
		assert.NoError(t, err, name)
	}
}

// As kro v0.9.4, an int does not fill a number field: double() it.
func TestTypedIntDoesNotFillANumber(t *testing.T) {
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	s := &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
		"apiVersion": {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
		"kind":       {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
		"metadata":   {SchemaProps: spec.SchemaProps{Type: []string{"object"}}},
		"spec": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
			"ratio": {SchemaProps: spec.SchemaProps{Type: []string{"number"}}}}}},
	}}}
	opts := graph.Options{Resolver: graph.StaticResolver{widget: s}}
	res := func(v string) string {
		return "resources:\n- id: w\n  template: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, spec: {ratio: '" + v + "'}}\n"
	}
	_, err := graph.Compile(parseRGD(t, rgdDoc("", res("${schema.spec.replicas}"))), opts)
	require.ErrorIs(t, err, graph.ErrType)
	assert.Contains(t, err.Error(), `resource "w": spec.ratio: ${schema.spec.replicas}: expression returns int but the field is double`)
	_, err = graph.Compile(parseRGD(t, rgdDoc("", res("${double(schema.spec.replicas)}"))), opts)
	assert.NoError(t, err)
}
