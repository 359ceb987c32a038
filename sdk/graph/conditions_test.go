package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// The shapes of kro's documentation on custom status conditions: one
// condition per entry, one composed with kro's own Ready, one per item of
// a collection.
const conditionsSchema = `apiVersion: v1alpha1
kind: App
spec:
  name: string | default="app"
  regions: "[]string"
status:
  conditions:
  - "${runtime.newCondition({type: 'AppReady', status: web.data.ready == 'yes' ? 'True' : 'False', reason: 'Replicas', message: ''})}"
  - "${runtime.newCondition({\n      type: 'Ready',\n      status: runtime.condition(schema, 'ResourcesReady').status == 'True' ? 'True' : 'False',\n      reason: 'Composed'\n    })}"
  - "${subnets.map(s, runtime.newCondition({type: 'Subnet-' + s.metadata.name, status: 'Unknown', reason: '', message: ''}))}"`

func conditionsResources() string {
	return "resources:\n" + cm("web", "", "") +
		"- id: subnets\n  forEach: [{r: '${schema.spec.regions}'}]\n  template: {apiVersion: v1, kind: ConfigMap, metadata: {name: 's-${r}'}}\n"
}

func TestCustomConditionsCompileAndEvaluate(t *testing.T) {
	g, err := graph.Compile(parseRGD(t, rgdDoc(conditionsSchema, conditionsResources())), graph.Options{Strict: true})
	require.NoError(t, err)
	require.True(t, g.HasConditions())

	inst := instance("x", map[string]any{"regions": []any{"a"}})
	inst["status"] = map[string]any{"conditions": []any{map[string]any{"type": "ResourcesReady", "status": "True"}}}
	conds, incomplete, err := g.Conditions(context.Background(), graph.Values{"schema": inst, "web": map[string]any{"data": map[string]any{"ready": "yes"}}})
	require.NoError(t, err, "subnets is pending: its entry waits, the others evaluate")
	assert.True(t, incomplete, "an entry waited")
	assert.Equal(t, []map[string]any{
		{"type": "AppReady", "status": "True", "reason": "Replicas", "message": ""},
		{"type": "Ready", "status": "True", "reason": "Composed", "message": ""},
	}, conds)

	conds, incomplete, err = g.Conditions(context.Background(), graph.Values{"schema": inst, "web": map[string]any{"data": map[string]any{}},
		"subnets": []any{map[string]any{"metadata": map[string]any{"name": "s-a"}}}})
	require.NoError(t, err, "web.data.ready is not there yet: its entry waits")
	assert.True(t, incomplete, "an entry waited")
	assert.Equal(t, []map[string]any{
		{"type": "Ready", "status": "True", "reason": "Composed", "message": ""},
		{"type": "Subnet-s-a", "status": "Unknown", "reason": "", "message": ""},
	}, conds)

	crd := g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"]
	assert.Equal(t, "array", crd.Type, "the conditions schema stays kro's")
}

func TestCustomConditionsRules(t *testing.T) {
	with := func(entries string) string {
		return "apiVersion: v1alpha1\nkind: App\nspec:\n  name: string | default=\"a\"\nstatus:\n  conditions:\n" + indent(entries, "  ")
	}
	res := "resources:\n" + cm("web", "", "")
	runFailCases(t, map[string]failCase{
		"not a condition": {schema: with("- ${web.metadata.name}"), resources: res, kind: graph.ErrType,
			want: "spec.schema.status.conditions[0]: ${web.metadata.name}: must return a condition (runtime.newCondition) or a list of them, got dyn"},
		"not standalone": {schema: with("- x ${web.metadata.name}"), resources: res, kind: graph.ErrExpression,
			want: "spec.schema.status.conditions[0]: x ${web.metadata.name}: must be a single ${} expression"},
		"unknown key": {schema: with("- \"${runtime.newCondition({type: 'A', status: 'True', severity: 'x'})}\""), resources: res, kind: graph.ErrExpression,
			want: `runtime.newCondition: unknown key "severity"`},
		"missing status": {schema: with("- \"${runtime.newCondition({type: 'A'})}\""), resources: res, kind: graph.ErrExpression,
			want: `runtime.newCondition: 'status' is required`},
		"bad literal status": {schema: with("- \"${runtime.newCondition({type: 'A', status: 'Yes'})}\""), resources: res, kind: graph.ErrInvalid,
			want: `status must be one of True, False, Unknown (got "Yes")`},
		"same type twice": {schema: with("- \"${runtime.newCondition({type: 'A', status: 'True'})}\"\n- \"${runtime.newCondition({type: 'A', status: 'False'})}\""), resources: res, kind: graph.ErrInvalid,
			want: `condition type "A" is declared by more than one conditions entry`},
		"reads its own": {schema: with("- \"${runtime.newCondition({type: 'A', status: runtime.condition(schema, 'B').status})}\"\n- \"${runtime.newCondition({type: 'B', status: 'True'})}\""), resources: res, kind: graph.ErrInvalid,
			want: `runtime.condition(schema, "B"): custom conditions cannot reference each other`},
		"unknown built-in": {schema: with("- \"${runtime.newCondition({type: 'A', status: runtime.condition(schema, 'Redy').status})}\""), resources: res, kind: graph.ErrInvalid,
			want: `runtime.condition(schema, "Redy"): unknown condition type`},
		"runtime elsewhere": {resources: "resources:\n" + cm("a", "", "x: ${runtime.condition(schema, 'Ready').status}"), kind: graph.ErrExpression,
			want: `undeclared reference to 'runtime'`},
	})
}

// Lists of expressions are accepted in spec.schema.status, as in kro.
func TestStatusListsOfExpressions(t *testing.T) {
	schema := "apiVersion: v1alpha1\nkind: App\nspec:\n  name: string | default=\"a\"\nstatus:\n  names: ['${web.metadata.name}', '${schema.spec.name}']"
	g, err := graph.Compile(parseRGD(t, rgdDoc(schema, "resources:\n"+cm("web", "", ""))), typedOptions(t))
	require.NoError(t, err)
	st, err := g.Status(context.Background(), graph.Values{"schema": instance("x", map[string]any{"name": "a"}), "web": map[string]any{"metadata": map[string]any{"name": "w"}}})
	require.NoError(t, err)
	assert.Equal(t, []any{"w", "a"}, st["names"])
	names := g.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["names"]
	assert.Equal(t, "array", names.Type)
	assert.Equal(t, "string", names.Items.Schema.Type)
}

func TestCustomConditionErrorsAreReported(t *testing.T) {
	schema := "apiVersion: v1alpha1\nkind: App\nspec:\n  name: string | default=\"a\"\nstatus:\n  conditions:\n" +
		"  - \"${runtime.newCondition({type: 'A', status: schema.spec.name})}\"\n" +
		"  - \"${runtime.newCondition({type: 'B', status: 'True'})}\""
	g, err := graph.Compile(parseRGD(t, rgdDoc(schema, "resources:\n"+cm("web", "", ""))), graph.Options{})
	require.NoError(t, err)
	conds, _, err := g.Conditions(context.Background(), graph.Values{"schema": instance("x", map[string]any{"name": "maybe"})})
	require.ErrorIs(t, err, graph.ErrEvaluation)
	assert.Contains(t, err.Error(), `status must be one of True, False, Unknown (got "maybe")`)
	assert.Equal(t, []map[string]any{{"type": "B", "status": "True", "reason": "", "message": ""}}, conds)
}

// runtime.condition reads any object's conditions; a missing one (or a
// missing status) gives an empty condition.
func TestRuntimeConditionOnChildren(t *testing.T) {
	schema := "apiVersion: v1alpha1\nkind: App\nspec:\n  name: string | default=\"a\"\nstatus:\n  conditions:\n" +
		"  - \"${runtime.newCondition({type: 'WebOK', status: runtime.condition(web, 'Available').status == 'True' ? 'True' : 'Unknown', reason: runtime.condition(web, 'Available').reason})}\""
	g, err := graph.Compile(parseRGD(t, rgdDoc(schema, "resources:\n"+cm("web", "", ""))), graph.Options{})
	require.NoError(t, err)
	for name, tt := range map[string]struct {
		web  map[string]any
		want map[string]any
	}{
		"no status": {map[string]any{}, map[string]any{"type": "WebOK", "status": "Unknown", "reason": "", "message": ""}},
		"no such condition": {map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Other", "status": "True"}}}},
			map[string]any{"type": "WebOK", "status": "Unknown", "reason": "", "message": ""}},
		"found": {map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicas"}}}},
			map[string]any{"type": "WebOK", "status": "True", "reason": "MinimumReplicas", "message": ""}},
	} {
		conds, _, err := g.Conditions(context.Background(), graph.Values{"schema": instance("x", map[string]any{}), "web": tt.web})
		require.NoError(t, err, name)
		assert.Equal(t, []map[string]any{tt.want}, conds, name)
	}
}
