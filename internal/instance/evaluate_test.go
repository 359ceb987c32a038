package instance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// A node evaluated on a goroutine of its own that panics fails alone,
// rather than ending the process: a zero Node has no program to run.
func TestGuardedNodePanicFailsTheNode(t *testing.T) {
	e := testEngine()
	o := &Outcome{ctx: context.Background(), nodes: map[string]*nodeResult{}, down: &downClusters{}, where: e.HomePlacement()}
	_, r := evaluator{e}.planSafely(&unstructured.Unstructured{Object: map[string]any{}}, &graph.Node{ID: "broken"}, o)
	require.NotNil(t, r)
	require.Equal(t, nodeFailed, r.state)
	assert.Contains(t, r.err.Error(), "panic while evaluating node broken")
	assert.Equal(t, ReasonEvaluationFailed, r.reason)
}

// countingPlacement places nothing (every item fails to be placed) and
// counts how many items it is asked about at once.
type countingPlacement struct {
	mu            sync.Mutex
	running, most int
	seen          map[int]int
}

func (c *countingPlacement) Place(_ *graph.Node, item int) (*Cluster, error) {
	c.mu.Lock()
	c.running++
	c.most = max(c.most, c.running)
	c.seen[item]++
	c.mu.Unlock()
	time.Sleep(time.Millisecond)
	c.mu.Lock()
	c.running--
	c.mu.Unlock()
	return nil, errors.New("nowhere")
}

// The items of one node are applied at most Options.ItemConcurrency at a
// time, each once, and their answers come back in the items' order.
func TestAtOnceIsBounded(t *testing.T) {
	e := testEngineWith(Options{ItemConcurrency: 3})
	where := &countingPlacement{seen: map[int]int{}}
	o := &Outcome{ctx: context.Background(), down: &downClusters{}, where: where}
	desired := make([]rendered, 50)
	for i := range desired {
		desired[i] = rendered{item: i, u: configMapNamed(fmt.Sprint(i))}
	}
	out := evaluator{e}.applyAll(o, &unstructured.Unstructured{Object: map[string]any{}}, &graph.Node{ID: "many"}, desired, false)
	require.Len(t, out, 50)
	for i, a := range out {
		assert.Equal(t, fmt.Sprint(i), a.entry.Name, "answer %d in order", i)
		var pe *placementError
		assert.ErrorAs(t, a.err, &pe)
	}
	assert.Len(t, where.seen, 50)
	for i, n := range where.seen {
		assert.Equal(t, 1, n, "item %d", i)
	}
	assert.LessOrEqual(t, where.most, 3)
}

// fixedPlacement places item i in clusters[i].
type fixedPlacement []*Cluster

func (f fixedPlacement) Place(_ *graph.Node, item int) (*Cluster, error) { return f[item], nil }

// An item whose cluster this reconcile found unreachable is not applied
// (its cluster is not called again): the node waits, naming the cluster,
// and the outcome keeps every cluster found down.
func TestGatherKeepsOrderAndEveryDownCluster(t *testing.T) {
	e := testEngine()
	spoke1, spoke3 := NewCluster("spoke-1", nil), NewCluster("spoke-3", nil)
	o := &Outcome{ctx: context.Background(), down: &downClusters{}, where: fixedPlacement{spoke1, spoke3}}
	o.down.set("spoke-1", context.DeadlineExceeded)
	o.down.set("spoke-3", context.DeadlineExceeded)
	n := &graph.Node{ID: "egress"}
	out := evaluator{e}.applyAll(o, &unstructured.Unstructured{Object: map[string]any{}}, n,
		[]rendered{{item: 0, u: configMapNamed("a")}, {item: 1, u: configMapNamed("b")}}, false)
	require.Len(t, out, 2)
	assert.Equal(t, "spoke-1", out[0].entry.Cluster)
	assert.Equal(t, "spoke-3", out[1].entry.Cluster)
	r := applyFailure(n, out[0], &nodeResult{}, o)
	assert.Equal(t, nodeUnreachable, r.state)
	assert.Contains(t, r.message, `cluster "spoke-1" is unreachable`)
	assert.True(t, o.Unreachable())
	assert.NotNil(t, o.down.err("spoke-3"), "every cluster found down is kept")
}

func configMapNamed(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	return u
}
