package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// conditionGraph has spec.replicas and a projected status.available.
func conditionGraph(t *testing.T) *graph.Graph {
	t.Helper()
	schema := "apiVersion: v1alpha1\nkind: App\nspec:\n  replicas: integer | default=1\nstatus:\n  available: ${int(a.data.available)}"
	g, err := graph.Compile(parseRGD(t, rgdDoc(schema, "resources:\n"+cm("a", "", "available: \"1\""))), graph.Options{})
	require.NoError(t, err)
	return g
}

// A health condition reads the whole instance, status included, typed by
// the generated CRD: it holds or not per instance, and a field the
// instance has not got yet is pending, not false.
func TestAnInstanceConditionReadsSpecAndStatus(t *testing.T) {
	g := conditionGraph(t)
	for _, src := range []string{
		`instance.status.available >= instance.spec.replicas && instance.status.state == "ACTIVE"`,
		`${instance.status.available >= instance.spec.replicas && instance.status.state == "ACTIVE"}`,
	} {
		c, err := g.CompileInstanceCondition(src)
		require.NoError(t, err, src)
		inst := func(avail int64, state string) map[string]any {
			return map[string]any{
				"metadata": map[string]any{"name": "x", "namespace": "default", "creationTimestamp": "2026-11-26T18:00:00Z"},
				"spec":     map[string]any{"replicas": int64(2)},
				"status":   map[string]any{"available": avail, "state": state},
			}
		}
		ok, err := c.Eval(context.Background(), inst(2, "ACTIVE"))
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = c.Eval(context.Background(), inst(1, "ACTIVE"))
		require.NoError(t, err)
		assert.False(t, ok)
		_, err = c.Eval(context.Background(), map[string]any{"spec": map[string]any{"replicas": int64(2)}})
		assert.ErrorIs(t, err, graph.ErrPending)
	}
}

// A misspelt field, a non-bool and an expression that does not parse are
// refused when compiled, each naming the expression.
func TestAnInstanceConditionIsTypeChecked(t *testing.T) {
	g := conditionGraph(t)
	for src, want := range map[string]error{
		`instance.status.availabel > 0`:      graph.ErrExpression,
		`instance.spec.replicas`:             graph.ErrType,
		`instance.status.available >`:        graph.ErrExpression,
		`instance.spec.replicas == "2"`:      graph.ErrExpression,
		`instance.metadata.namespacee == ""`: graph.ErrExpression,
	} {
		_, err := g.CompileInstanceCondition(src)
		require.ErrorIs(t, err, want, src)
		assert.Contains(t, err.Error(), "spec.health.instanceCondition: "+src, src)
	}
	long := `instance.status.availabel > 0 && ` + strings.Repeat(`instance.spec.replicas > 0 && `, 20) + `true`
	_, err := g.CompileInstanceCondition(long)
	require.Error(t, err)
	assert.Less(t, len(err.Error()), len(long), "the expression is truncated")
}

// An evaluation is bounded by the graph's limits: a condition that spins
// over a large range stops at the cost limit.
func TestAnInstanceConditionIsBounded(t *testing.T) {
	g := conditionGraph(t)
	c, err := g.CompileInstanceCondition(`lists.range(instance.spec.replicas).all(i, lists.range(instance.spec.replicas).all(j, i + j >= 0))`)
	require.NoError(t, err)
	_, err = c.Eval(context.Background(), map[string]any{"spec": map[string]any{"replicas": int64(100000)}, "status": map[string]any{}})
	assert.ErrorIs(t, err, graph.ErrLimit)
}
