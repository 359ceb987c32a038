package hubgraph

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// A node evaluated on a goroutine of its own that panics fails alone,
// rather than ending the process: a zero Node has no program to run.
func TestGuardedNodePanicFailsTheNode(t *testing.T) {
	e := &evaluator{}
	o := &outcome{ctx: context.Background(), states: map[string]nodeState{}, down: map[string]error{}}
	r := e.guarded(o, &unstructured.Unstructured{}, &plan{}, &graph.Node{ID: "broken"})
	require.Equal(t, nodeFailed, r.state)
	require.ErrorIs(t, r.err, errPanic)
	assert.Contains(t, r.err.Error(), `resource "broken"`)
	assert.Equal(t, reasonEvaluationFailed, r.reason)
}
