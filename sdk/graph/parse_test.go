package graph_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// A malformed duration, timestamp or regex literal is refused when the
// RGD is compiled, wherever it sits in the expression; a well-formed one
// compiles. The first compile of a text parses it, the later ones reuse
// the parse: both must refuse alike.
func TestMalformedLiteralsAreRefusedAtCompile(t *testing.T) {
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
			rgd := hostileRGD{spec: map[string]any{"a": "string"}, resources: []any{configMap("cm", tt.expr)}}.build(t)
			for round := range 3 {
				_, err := graph.Compile(rgd, graph.Options{})
				if tt.ok {
					require.NoError(t, err, "round %d", round)
					continue
				}
				require.ErrorIs(t, err, graph.ErrExpression, "round %d", round)
				assert.Contains(t, err.Error(), "invalid ", "round %d", round)
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
