package hubgraph

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: keyOf(ns, name)}
}

// A hub graph's queue hands requests out by namespace turns: a tenant that
// floods it puts only its own requests behind one another.
func TestHubGraphQueueTakesNamespaceTurns(t *testing.T) {
	s := policyServer(t, "", Policy{})
	q := s.newQueue("test", nil)
	defer q.ShutDown()
	for i := range 100 {
		q.Add(req("flood", fmt.Sprintf("i%d", i)))
	}
	q.Add(req("calm", "one"))
	require.Equal(t, 101, q.Len())
	var order []string
	for range 3 {
		r, shutdown := q.Get()
		require.False(t, shutdown)
		order = append(order, r.String())
		q.Done(r)
	}
	assert.Equal(t, []string{"flood/i0", "calm/one", "flood/i1"}, order)
}

// A reconcile stopped by a limit is retried at its namespace's pace: ten
// times what it took after the namespace's previous one, whatever the
// instance; another namespace keeps its own pace.
func TestHubGraphLimitedRetriesArePacedPerNamespace(t *testing.T) {
	s := policyServer(t, "", Policy{})
	assert.Equal(t, waitingRequeue, s.limitedRequeue(req("a", "x"), time.Second), "no queue yet")
	q := s.newQueue("test", nil)
	defer q.ShutDown()
	first := s.limitedRequeue(req("heavy", "a"), time.Second)
	second := s.limitedRequeue(req("heavy", "b"), time.Second)
	other := s.limitedRequeue(req("calm", "c"), time.Second)
	assert.GreaterOrEqual(t, first, 9*time.Second)
	assert.GreaterOrEqual(t, second, first+9*time.Second, "the namespace's second waits behind its first")
	assert.Less(t, other, second, "another namespace is paced on its own")
}
