package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// rgdDoc builds an RGD from a schema block (indented under spec.schema)
// and a resources block (indented under spec).
func rgdDoc(schema, resources string) string {
	if schema == "" {
		schema = `apiVersion: v1alpha1
kind: App
spec:
  name: string | default="app"
  replicas: integer | default=1
  regions: "[]string"
  enabled: boolean | default=true`
	}
	return "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: test}\nspec:\n  schema:\n" +
		indent(schema, "    ") + "\n" + indent(resources, "  ")
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// cm is a ConfigMap resource with the given id and extra YAML (fields of
// the resource entry, then data entries).
func cm(id, entry, data string) string {
	out := fmt.Sprintf("- id: %s\n", id)
	if entry != "" {
		out += indent(entry, "  ") + "\n"
	}
	out += fmt.Sprintf("  template:\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: %s\n", id)
	if data != "" {
		out += "    data:\n" + indent(data, "      ") + "\n"
	}
	return out
}

type failCase struct {
	schema, resources string
	opts              graph.Options
	kind              error
	// want is a substring of the error: it names the resource, the path
	// and, for expressions, the expression.
	want string
}

func runFailCases(t *testing.T, tests map[string]failCase) {
	t.Helper()
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := graph.Compile(parseRGD(t, rgdDoc(tt.schema, tt.resources)), tt.opts)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.kind)
			assert.Contains(t, err.Error(), tt.want)
			var ge *graph.Error
			assert.ErrorAs(t, err, &ge)
			assert.NotContains(t, err.Error(), "\n |", "CEL source excerpts are stripped")
		})
	}
}

func TestSchemaValidation(t *testing.T) {
	ok := "resources:\n" + cm("a", "", "")
	runFailCases(t, map[string]failCase{
		"kind not UpperCamelCase": {schema: "apiVersion: v1alpha1\nkind: app", resources: ok, kind: graph.ErrInvalid,
			want: `spec.schema.kind: kind "app" must be UpperCamelCase`},
		"bad version": {schema: "apiVersion: version1\nkind: App", resources: ok, kind: graph.ErrInvalid,
			want: `spec.schema.apiVersion: version "version1"`},
		"bad group": {schema: "apiVersion: v1\nkind: App\ngroup: Not_A_Group", resources: ok, kind: graph.ErrInvalid,
			want: `spec.schema.group: group "Not_A_Group"`},
		"group without dot": {schema: "apiVersion: v1\nkind: App\ngroup: local", resources: ok, kind: graph.ErrInvalid,
			want: `spec.schema.group`},
		"bad scope": {schema: "apiVersion: v1\nkind: App\nscope: Global", resources: ok, kind: graph.ErrInvalid,
			want: `spec.schema.scope: scope "Global"`},
		"simpleschema error names the spec field": {schema: "apiVersion: v1\nkind: App\nspec:\n  a:\n    b: integer | minimum=x", resources: ok,
			kind: graph.ErrSchema, want: `spec.schema.spec.a.b: invalid marker: minimum="x": not a number`},
		"unknown type": {schema: "apiVersion: v1\nkind: App\nspec:\n  port: Port", resources: ok,
			kind: graph.ErrSchema, want: `spec.schema.spec.port: unknown type "Port"`},
		"custom type cycle": {schema: "apiVersion: v1\nkind: App\ntypes:\n  A:\n    b: A\nspec:\n  a: string", resources: ok,
			kind: graph.ErrSchema, want: `spec.schema.types.A: custom type cycle: A -> A`},
		"status literal": {schema: "apiVersion: v1\nkind: App\nstatus:\n  x: hello", resources: ok,
			kind: graph.ErrInvalid, want: `spec.schema.status.x: hello: a status field must be a ${} expression`},
		"status list without expressions": {schema: "apiVersion: v1\nkind: App\nstatus:\n  x: [a]", resources: ok,
			kind: graph.ErrInvalid, want: `spec.schema.status.x: a status field must hold ${} expressions`},
		"status expression error": {schema: "apiVersion: v1\nkind: App\nspec:\n  nm: string\nstatus:\n  x: ${schema.spec.nm + 1}", resources: ok,
			kind: graph.ErrExpression, want: `spec.schema.status.x: ${schema.spec.nm + 1}: found no matching overload for '_+_'`},
		"status unknown resource": {schema: "apiVersion: v1\nkind: App\nstatus:\n  x: ${nope.metadata.name}", resources: ok,
			kind: graph.ErrExpression, want: `undeclared reference to 'nope'`},
	})
}

func TestResourceValidation(t *testing.T) {
	runFailCases(t, map[string]failCase{
		"id missing": {resources: "resources:\n" + cm(`""`, "", ""), kind: graph.ErrInvalid,
			want: `spec.resources[0].id: id is required`},
		"id not lowerCamelCase": {resources: "resources:\n" + cm("my-cm", "", ""), kind: graph.ErrInvalid,
			want: `resource "my-cm": spec.resources[0].id: id "my-cm" must be lowerCamelCase`},
		"id capitalised": {resources: "resources:\n" + cm("Config", "", ""), kind: graph.ErrInvalid,
			want: `id "Config" must be lowerCamelCase`},
		"id reserved (kro)": {resources: "resources:\n" + cm("schema", "", ""), kind: graph.ErrInvalid,
			want: `id "schema" is a reserved word`},
		"id reserved (CEL)": {resources: "resources:\n" + cm("in", "", ""), kind: graph.ErrInvalid,
			want: `id "in" is a reserved word`},
		"id reserved (each)": {resources: "resources:\n" + cm("each", "", ""), kind: graph.ErrInvalid,
			want: `id "each" is a reserved word`},
		"duplicate id": {resources: "resources:\n" + cm("a", "", "") + cm("a", "", ""), kind: graph.ErrInvalid,
			want: `resource "a": spec.resources[1].id: duplicate id "a"`},
		"neither template nor externalRef": {resources: "resources:\n- id: a", kind: graph.ErrInvalid,
			want: `resource "a": template: exactly one of template and externalRef is required`},
		"both template and externalRef": {resources: "resources:\n" + cm("a", "externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}", ""),
			kind: graph.ErrInvalid, want: `resource "a": template: exactly one of template and externalRef is allowed`},
		"template without apiVersion": {resources: "resources:\n- id: a\n  template: {kind: ConfigMap, metadata: {name: a}}", kind: graph.ErrInvalid,
			want: `resource "a": apiVersion: required`},
		"template without kind": {resources: "resources:\n- id: a\n  template: {apiVersion: v1, metadata: {name: a}}", kind: graph.ErrInvalid,
			want: `resource "a": kind: required`},
		"template without metadata": {resources: "resources:\n- id: a\n  template: {apiVersion: v1, kind: ConfigMap}", kind: graph.ErrInvalid,
			want: `resource "a": metadata: required, and must be an object`},
		"kind is an expression": {resources: "resources:\n- id: a\n  template: {apiVersion: v1, kind: '${schema.spec.name}', metadata: {name: a}}", kind: graph.ErrInvalid,
			want: `resource "a": kind: required, and must be a plain string without ${}`},
		"bad apiVersion": {resources: "resources:\n- id: a\n  template: {apiVersion: a/b/c, kind: X, metadata: {name: a}}", kind: graph.ErrInvalid,
			want: `resource "a": apiVersion: invalid apiVersion "a/b/c"`},
		"externalRef without name or selector": {resources: "resources:\n- id: a\n  externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {namespace: x}}",
			kind: graph.ErrInvalid, want: `resource "a": externalRef.metadata: exactly one of name and selector is required`},
		"externalRef with name and selector": {resources: "resources:\n- id: a\n  externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, selector: {matchLabels: {a: b}}}}",
			kind: graph.ErrInvalid, want: `exactly one of name and selector is required`},
		"externalRef without kind": {resources: "resources:\n- id: a\n  externalRef: {apiVersion: v1, kind: '', metadata: {name: x}}",
			kind: graph.ErrInvalid, want: `resource "a": externalRef.kind: required`},
		"externalRef with forEach": {resources: "resources:\n- id: a\n  forEach: [{r: '${schema.spec.regions}'}]\n  externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}",
			kind: graph.ErrInvalid, want: `resource "a": forEach: an externalRef cannot have forEach`},
		"externalRef name type": {resources: "resources:\n- id: a\n  externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.spec.replicas}'}}",
			kind: graph.ErrType, want: `resource "a": externalRef.metadata.name: ${schema.spec.replicas}: expression returns int but the field is string`},
	})
}

func TestExpressionValidation(t *testing.T) {
	forEach := func(entries string) string {
		return "resources:\n" + cm("a", "forEach:\n"+entries, "")
	}
	runFailCases(t, map[string]failCase{
		"undefined field": {resources: "resources:\n" + cm("a", "", "x: ${schema.spec.nam}"), kind: graph.ErrExpression,
			want: `resource "a": data.x: ${schema.spec.nam}: undefined field 'nam'`},
		"syntax error": {resources: "resources:\n" + cm("a", "", "x: ${schema.spec.name +}"), kind: graph.ErrExpression,
			want: `resource "a": data.x: ${schema.spec.name +}: Syntax error`},
		"an expression inside an expression": {resources: "resources:\n" + cm("a", "", "x: ${schema.spec.name + ${schema.spec.name}}"), kind: graph.ErrExpression,
			want: `resource "a": data.x: ${schema.spec.name + ${schema.spec.name}}: invalid ${} expression: an expression inside an expression`},
		"non-string in a longer string": {resources: "resources:\n" + cm("a", "", "x: n-${schema.spec.replicas}"), kind: graph.ErrType,
			want: `resource "a": data.x: ${schema.spec.replicas}: an expression inside a longer string must return a string, got int`},
		"unknown resource": {resources: "resources:\n" + cm("a", "", "x: ${b.metadata.name}"), kind: graph.ErrExpression,
			want: `resource "a": data.x: ${b.metadata.name}: undeclared reference to 'b'`},
		"iterator outside its resource": {resources: "resources:\n" + cm("a", "forEach: [{region: '${schema.spec.regions}'}]", "") + cm("b", "", "x: ${region}"),
			kind: graph.ErrExpression, want: `resource "b": data.x: ${region}: undeclared reference to 'region'`},
		"forEach not a list": {resources: forEach("- region: ${schema.spec.name}"), kind: graph.ErrType,
			want: `resource "a": forEach[0].region: ${schema.spec.name}: forEach needs a list, got string`},
		"forEach not standalone": {resources: forEach("- region: x-${schema.spec.name}"), kind: graph.ErrExpression,
			want: `resource "a": forEach[0].region: x-${schema.spec.name}: must be a single ${} expression returning a list`},
		"forEach two iterators in one entry": {resources: forEach("- {a: '${schema.spec.regions}', b: '${schema.spec.regions}'}"), kind: graph.ErrInvalid,
			want: `resource "a": forEach[0]: each entry must bind exactly one iterator, got 2`},
		"forEach reserved iterator": {resources: forEach("- self: ${schema.spec.regions}"), kind: graph.ErrInvalid,
			want: `resource "a": forEach[0].self: ${schema.spec.regions}: iterator name "self" is a reserved word`},
		"forEach iterator not lowerCamelCase": {resources: forEach("- My_Region: ${schema.spec.regions}"), kind: graph.ErrInvalid,
			want: `iterator name "My_Region" must be lowerCamelCase`},
		"forEach iterator is a resource id": {resources: forEach("- a: ${schema.spec.regions}"), kind: graph.ErrInvalid,
			want: `iterator name "a" is also a resource id`},
		"forEach duplicate iterator": {resources: forEach("- r: ${schema.spec.regions}\n- r: ${schema.spec.regions}"), kind: graph.ErrInvalid,
			want: `resource "a": forEach[1].r: ${schema.spec.regions}: duplicate iterator "r"`},
		"forEach too many iterators": {resources: forEach(strings.Repeat("- r: ${schema.spec.regions}\n", 11)), kind: graph.ErrInvalid,
			want: `resource "a": forEach: at most 10 iterators, got 11`},
		"readyWhen reads another resource": {resources: "resources:\n" + cm("a", "", "") + cm("b", "readyWhen: ['${a.metadata.name != \"\"}']", ""),
			kind: graph.ErrReference, want: `resource "b": readyWhen[0]: ${a.metadata.name != ""}: readyWhen may only reference "b", not "a"`},
		"readyWhen reads schema": {resources: "resources:\n" + cm("a", "readyWhen: ['${schema.spec.enabled}']", ""),
			kind: graph.ErrReference, want: `resource "a": readyWhen[0]: ${schema.spec.enabled}: readyWhen may only reference "a", not "schema"`},
		"readyWhen not bool": {resources: "resources:\n" + cm("a", "readyWhen: ['${a.metadata.name}']", ""), opts: typedOptions(t),
			kind: graph.ErrType, want: `resource "a": readyWhen[0]: ${a.metadata.name}: must return a bool, got string`},
		"readyWhen each on a plain resource": {resources: "resources:\n" + cm("a", "readyWhen: ['${each.metadata.name == \"x\"}']", ""),
			kind: graph.ErrExpression, want: `resource "a": readyWhen[0]: ${each.metadata.name == "x"}: undeclared reference to 'each'`},
		"readyWhen not standalone": {resources: "resources:\n" + cm("a", "readyWhen: ['x ${a.metadata.name == \"\"}']", ""),
			kind: graph.ErrExpression, want: `resource "a": readyWhen[0]: x ${a.metadata.name == ""}: must be a single ${} expression`},
		"includeWhen not bool": {resources: "resources:\n" + cm("a", "includeWhen: ['${schema.spec.name}']", ""),
			kind: graph.ErrType, want: `resource "a": includeWhen[0]: ${schema.spec.name}: must return a bool, got string`},
		"includeWhen iterator": {resources: "resources:\n" + cm("a", "forEach: [{r: '${schema.spec.regions}'}]\nincludeWhen: ['${r == \"x\"}']", ""),
			kind: graph.ErrExpression, want: `resource "a": includeWhen[0]: ${r == "x"}: undeclared reference to 'r'`},
		"includeWhen on itself": {resources: "resources:\n" + cm("a", "includeWhen: ['${a.metadata.name == \"\"}']", ""),
			kind: graph.ErrCycle, want: `resource "a": dependency cycle: a -> a`},
	})
}

func TestReadyWhenAcceptsBareCEL(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc("", "resources:\n"+cm("a", "readyWhen: ['a.data.ok == \"yes\"']", ""))), graph.Options{})
	require.NoError(t, err)
	ready, err := g.Node("a").Ready(context.Background(), graph.Values{}, map[string]any{"data": map[string]any{"ok": "yes"}})
	require.NoError(t, err)
	assert.True(t, ready)
}

func TestCycles(t *testing.T) {
	runFailCases(t, map[string]failCase{
		"two resources": {resources: "resources:\n" + cm("a", "", "x: ${b.metadata.name}") + cm("b", "", "x: ${a.metadata.name}"),
			kind: graph.ErrCycle, want: `resource "a": dependency cycle: a -> b -> a`},
		"three resources": {resources: "resources:\n" + cm("c", "", "x: ${a.metadata.name}") + cm("a", "", "x: ${b.metadata.name}") + cm("b", "", "x: ${c.metadata.name}"),
			kind: graph.ErrCycle, want: `dependency cycle: c -> a -> b -> c`},
		"self": {resources: "resources:\n" + cm("a", "", "x: ${a.metadata.name}"),
			kind: graph.ErrCycle, want: `dependency cycle: a -> a`},
		"through includeWhen": {resources: "resources:\n" + cm("a", "includeWhen: ['${b.metadata.name != \"\"}']", "") + cm("b", "", "x: ${a.metadata.name}"),
			kind: graph.ErrCycle, want: `dependency cycle: a -> b -> a`},
		"through forEach": {resources: "resources:\n" + strings.Replace(cm("a", "forEach: [{r: '${b.data.list}'}]", ""), "name: a", "name: a-${r}", 1) + cm("b", "", "x: ${a[0].metadata.name}"),
			kind: graph.ErrCycle, want: `dependency cycle: a -> b -> a`},
	})
}

func TestTopologicalOrderIsStableBySourceOrder(t *testing.T) {
	res := "resources:\n" + cm("d", "", "x: ${b.metadata.name}") + cm("c", "", "") + cm("b", "", "") + cm("a", "", "x: ${c.metadata.name}")
	g, err := graph.Compile(parseRGD(t, rgdDoc("", res)), graph.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"c", "b", "d", "a"}, ids(g.Nodes))
	assert.Equal(t, [][]string{{"c", "b"}, {"d", "a"}}, levelIDs(g.Levels))
	assert.Equal(t, [][]string{{"d", "a"}, {"c", "b"}}, levelIDs(g.DeletionWaves))
}

func TestReadyWhenDoesNotCreateDependencies(t *testing.T) {
	res := "resources:\n" + cm("a", "readyWhen: ['${a.data.ok == \"y\"}']", "") + cm("b", "", "x: ${a.metadata.name}")
	g, err := graph.Compile(parseRGD(t, rgdDoc("", res)), graph.Options{})
	require.NoError(t, err)
	assert.Empty(t, g.Node("a").Dependencies)
}

// As in kro, a condition must be typed bool (or optional bool): a dyn
// result is refused unless it comes from a kind read without a schema.
func TestConditionsMustBeTypedBool(t *testing.T) {
	schema := "apiVersion: v1alpha1\nkind: App\nspec:\n  config: object\n  flag: boolean | default=true"
	runFailCases(t, map[string]failCase{
		"includeWhen on a free-form field": {schema: schema, resources: "resources:\n" + cm("a", "includeWhen: ['${schema.spec.config.enabled}']", ""),
			kind: graph.ErrType, want: `resource "a": includeWhen[0]: ${schema.spec.config.enabled}: must return a bool, got dyn`},
		"readyWhen on a typed kind's free-form field": {schema: schema, resources: "resources:\n" + cm("a", "readyWhen: ['${a.data[\"x\"]}']", ""), opts: typedOptions(t),
			kind: graph.ErrType, want: `must return a bool, got string`},
	})
	for _, entry := range []string{
		"readyWhen: ['${a.data.ready}']",        // untyped kind: dyn allowed
		"includeWhen: ['${schema.spec.?flag}']", // optional(bool)
		"includeWhen: ['${schema.spec.flag}']",  // bool
	} {
		_, err := graph.Compile(parseRGD(t, rgdDoc(schema, "resources:\n"+cm("a", entry, ""))), graph.Options{})
		assert.NoError(t, err, entry)
	}
}

func TestOptionalConditionsReadEmptyAsFalse(t *testing.T) {
	schema := "apiVersion: v1alpha1\nkind: App\nspec:\n  flag: boolean"
	g, err := graph.Compile(parseRGD(t, rgdDoc(schema, "resources:\n"+cm("a", "includeWhen: ['${schema.spec.?flag}']", ""))), graph.Options{})
	require.NoError(t, err)
	in, err := g.Node("a").Included(context.Background(), graph.Values{"schema": instance("x", map[string]any{})})
	require.NoError(t, err)
	assert.False(t, in)
	in, err = g.Node("a").Included(context.Background(), graph.Values{"schema": instance("x", map[string]any{"flag": true})})
	require.NoError(t, err)
	assert.True(t, in)
}

// As kro v0.9.4 does, a "${" that nothing closes is written as text; it is
// a warning (kro v0.10 refuses it), and so under Strict too.
func TestAnUnterminatedExpressionIsTextWithAWarning(t *testing.T) {
	rgd := parseRGD(t, rgdDoc("", "resources:\n"+cm("a", "", `x: "hello ${schema.spec.name"`+"\nz: ${schema.spec.name}-${schema.spec.name")))
	for _, opts := range []graph.Options{{}, {Strict: true}} {
		g, err := graph.Compile(rgd, opts)
		require.NoError(t, err)
		require.Len(t, g.Warnings, 2)
		assert.Equal(t, "data.x", g.Warnings[0].Path)
		assert.Equal(t, "hello ${schema.spec.name", g.Warnings[0].Expression)
		assert.Contains(t, g.Warnings[0].Message, `a "${" that no "}" closes is written as text`)
		assert.Equal(t, "data.z", g.Warnings[1].Path)

		obj, err := g.Node("a").Render(context.Background(), graph.Values{"schema": instance("x", map[string]any{"name": "n"})}, nil)
		require.NoError(t, err)
		data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
		assert.Equal(t, map[string]string{"x": "hello ${schema.spec.name", "z": "n-${schema.spec.name"}, data)
	}
}

// kro type-checks a string template as one concatenation, where string +
// optional has no overload, and refuses it; fleetgraph writes the
// optional's value (nothing when it has none): an extension, refused under
// Strict.
func TestAnOptionalInsideAStringIsAnExtension(t *testing.T) {
	rgd := parseRGD(t, rgdDoc("", "resources:\n"+cm("a", "", `x: "${schema.metadata.?labels.app}/${schema.spec.name}"`)))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	assert.Equal(t, []graph.Extension{{ResourceID: "a", Path: "data.x", Feature: "an optional value inside a longer string"}}, g.Extensions)

	_, err = graph.Compile(rgd, graph.Options{Strict: true})
	require.ErrorIs(t, err, graph.ErrExtension)
	assert.Contains(t, err.Error(), `resource "a": data.x: an optional value inside a longer string`)

	alone := parseRGD(t, rgdDoc("", "resources:\n"+cm("a", "", `x: "${schema.metadata.?labels.app.orValue('none')}"`)))
	g, err = graph.Compile(alone, graph.Options{Strict: true})
	require.NoError(t, err, "an optional unwrapped with orValue is a string, as in kro")
	assert.Empty(t, g.Extensions)
}

// As in kro v0.9.4, a projection named state is accepted and types the
// CRD's status.state, but the runtime writes its own state there: the
// projection is dropped with a warning.
func TestAStateProjectionIsNeverWritten(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc("apiVersion: v1\nkind: App\nspec:\n  name: string\nstatus:\n  state: ${schema.spec.name}\n  other: ${a.metadata.name}", "resources:\n"+cm("a", "", ""))), graph.Options{Strict: true})
	require.NoError(t, err)
	require.Len(t, g.Warnings, 1)
	assert.Equal(t, "spec.schema.status.state", g.Warnings[0].Path)
	assert.Contains(t, g.Warnings[0].Message, "written by the runtime")
	st, err := g.Status(context.Background(), graph.Values{"schema": instance("x", map[string]any{"name": "n"}), "a": map[string]any{"metadata": map[string]any{"name": "a1"}}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"other": "a1"}, st)
	assert.Equal(t, "string", g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["state"].Type)
}

// kro v0.10 reserves the id "graphengine"; kro v0.9.4 accepts it, so it is
// served, with a warning that says to rename it before moving on.
func TestAnIDKroV010ReservesIsWarnedOf(t *testing.T) {
	rgd := parseRGD(t, rgdDoc("", "resources:\n"+cm("graphengine", "", `x: "${schema.spec.name}"`)))
	g, err := graph.Compile(rgd, graph.Options{Strict: true})
	require.NoError(t, err)
	require.Len(t, g.Warnings, 1)
	assert.Equal(t, "graphengine", g.Warnings[0].ResourceID)
	assert.Equal(t, "spec.resources[0].id", g.Warnings[0].Path)
	assert.Contains(t, g.Warnings[0].Message, "reserved from kro v0.10")
}
