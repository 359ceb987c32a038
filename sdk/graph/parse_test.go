package graph_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// A malformed duration, timestamp or regex literal is a warning when the
// RGD is compiled, wherever it sits in the expression: kro v0.9.4 accepts
// it and fails each time it is evaluated, and one in a branch never taken
// works there. A well-formed one warns of nothing. The first compile of a
// text parses it, the later ones reuse the parse: both must warn alike.
func TestMalformedLiteralsAreWarnedOfAtCompile(t *testing.T) {
	tests := map[string]struct {
		expr string
		ok   bool
	}{
		"duration":                {`${string(duration('1x'))}`, false},
		"timestamp":               {`${string(timestamp('yesterday'))}`, false},
		"regex":                   {`${string('a'.matches('('))}`, false},
		"regex inside a macro":    {`${string(['a'].exists(s, s.matches('[')))}`, false},
		"duration inside ternary": {`${schema.spec.a == '' ? string(duration('5q')) : 'x'}`, false},
		"good duration":           {`${string(duration('1h5m'))}`, true},
		"good timestamp":          {`${string(timestamp('2024-01-02T03:04:05Z'))}`, true},
		"good regex":              {`${string('a'.matches('^[a-z]+$'))}`, true},
		"pattern from the spec":   {`${string('a'.matches(schema.spec.a))}`, true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			cm := configMap("cm", "${schema.spec.a}")
			cm["template"].(map[string]any)["data"] = map[string]any{"v": tt.expr}
			rgd := hostileRGD{spec: map[string]any{"a": "string"}, resources: []any{cm}}.build(t)
			for round := range 3 {
				g, err := graph.Compile(rgd, graph.Options{})
				require.NoError(t, err, "round %d", round)
				if tt.ok {
					assert.Empty(t, g.Warnings, "round %d", round)
					continue
				}
				require.Len(t, g.Warnings, 1, "round %d", round)
				w := g.Warnings[0]
				assert.Equal(t, "cm", w.ResourceID)
				assert.Equal(t, tt.expr, w.Expression)
				assert.Contains(t, w.Message, "invalid ", "round %d", round)
				assert.Contains(t, w.Message, "fails each time it is evaluated", "round %d", round)
			}
		})
	}
}

// Graphs compiled at once share the parses of their expressions; the
// race detector watches.
func TestConcurrentCompilesShareParses(t *testing.T) {
	opts := typedOptions(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 5 {
				g, err := graph.Compile(chainRGD(t, 3+i%2), opts)
				if assert.NoError(t, err) {
					assert.Len(t, g.Nodes, 3+i%2, fmt.Sprint(i))
				}
			}
		})
	}
	wg.Wait()
}
