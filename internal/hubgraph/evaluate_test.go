package hubgraph

import (
	"context"
	"errors"
	"sync"
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

// atOnce calls every index once, never more than maxNodesAtOnce at a
// time.
func TestAtOnceIsBounded(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	seen := map[int]int{}
	atOnce(50, func(i int) {
		mu.Lock()
		running++
		most = max(most, running)
		seen[i]++
		mu.Unlock()
		mu.Lock()
		running--
		mu.Unlock()
	})
	assert.Len(t, seen, 50)
	for i, n := range seen {
		assert.Equal(t, 1, n, "index %d", i)
	}
	assert.LessOrEqual(t, most, maxNodesAtOnce)
}

// gather keeps the iterations' order, returns the first problem, and the
// problem carries every cluster any iteration found unreachable.
func TestGatherKeepsOrderAndEveryDownCluster(t *testing.T) {
	ok := func(name string) item {
		u := &unstructured.Unstructured{Object: map[string]any{"n": name}}
		return item{got: u, child: childID{cluster: name, name: name}}
	}
	r, observed, problem := gather([]item{ok("a"), ok("b")})
	require.Nil(t, problem)
	assert.Equal(t, []childID{{cluster: "a", name: "a"}, {cluster: "b", name: "b"}}, r.desired)
	assert.Equal(t, "b", observed[1].(map[string]any)["n"])

	first := unreachableAt("spoke-1", errors.New("timeout"))
	second := unreachableAt("spoke-3", errors.New("timeout"))
	_, _, problem = gather([]item{ok("a"), {problem: &first}, ok("c"), {problem: &second}})
	require.NotNil(t, problem)
	assert.Contains(t, problem.err.Error(), "spoke-1")
	assert.Len(t, problem.down, 2)
}
