package fair

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

func req(cluster, ns, name string) mcreconcile.Request {
	return mcreconcile.Request{ClusterName: multicluster.ClusterName(cluster), Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

func TestTheQueueHandsOutNamespacesInTurn(t *testing.T) {
	q, _ := NewQueue("")
	t.Cleanup(q.ShutDown)
	for i := range 1000 {
		q.Add(req("", "heavy", fmt.Sprint(i)))
	}
	q.Add(req("", "benign", "app"))
	var got []string
	for range 4 {
		r, _ := q.Get()
		got = append(got, r.Namespace+"/"+r.Name)
		q.Done(r)
	}
	assert.Equal(t, []string{"heavy/0", "benign/app", "heavy/1", "heavy/2"}, got,
		"a request of another namespace is next but one, however many are queued before it")
	assert.Equal(t, 997, q.Len())
}

func TestTheQueueHandsOutClustersInTurnThenTheirNamespaces(t *testing.T) {
	q := newFairQueue()
	for _, r := range []mcreconcile.Request{
		req("a", "x", "1"), req("a", "x", "2"), req("a", "y", "1"), req("a", "z", "1"),
		req("b", "x", "1"), req("b", "x", "2"),
	} {
		q.Push(r)
	}
	var got []string
	for q.Len() > 0 {
		r := q.Pop()
		got = append(got, fmt.Sprintf("%s:%s/%s", r.ClusterName, r.Namespace, r.Name))
	}
	assert.Equal(t, []string{"a:x/1", "b:x/1", "a:y/1", "b:x/2", "a:z/1", "a:x/2"}, got)
	assert.Empty(t, q.byCluster, "nothing is held once empty")
}

func TestFifoGivesItsRoomBack(t *testing.T) {
	var f fifo[int]
	for i := range 1000 {
		f.push(i)
	}
	for i := range 990 {
		require.Equal(t, i, f.pop())
	}
	assert.Equal(t, 10, f.len())
	assert.LessOrEqual(t, len(f.items), 64, "popped items are not kept")
	for i := 990; i < 1000; i++ {
		require.Equal(t, i, f.pop())
	}
	assert.Zero(t, f.len())
}

func TestRetriesOfOneNamespaceDoNotDelayAnother(t *testing.T) {
	l := newRetries()
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	// A tenant's 300 instances fail at once: its bucket (100, then 10 a
	// second) spreads their retries over 20 seconds.
	var last time.Duration
	for i := range 300 {
		last = l.When(req("", "heavy", fmt.Sprint(i)))
	}
	assert.Greater(t, last, 15*time.Second, "the failing tenant's retries are limited")
	assert.Equal(t, retryBase, l.When(req("", "benign", "app")), "another namespace's first retry waits only its own backoff")
	assert.Equal(t, retryBase, l.When(req("other", "heavy", "0")), "so does the same namespace on another cluster")

	now = now.Add(time.Minute)
	l.When(req("", "benign", "app2"))
	assert.Equal(t, 1, l.flowCount(), "buckets full again are dropped")
}

func TestAnInstancesBackoffStillGrows(t *testing.T) {
	l := newRetries()
	r := req("", "ns", "app")
	for range 5 {
		l.When(r)
	}
	assert.Equal(t, 5, l.NumRequeues(r))
	assert.Equal(t, 32*retryBase, l.When(r))
	l.Forget(r)
	assert.Equal(t, retryBase, l.When(r))
}

func TestARetryAfterALimitWaitsTenTimesWhatTheReconcileTook(t *testing.T) {
	l := newRetries()
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	heavy, other := req("", "heavy", "app"), req("", "heavy", "other")
	stopped := fmt.Errorf("template: ... (Limits.InstanceTimeout): %w", ErrStoppedByLimit)
	assert.Equal(t, 20*time.Second, l.After(heavy, fmt.Errorf("reconciling: %w", stopped), 2*time.Second),
		"an instance that spent 2 s and was stopped by a limit waits 20 s, not the backoff's 5 ms")
	assert.Equal(t, retryBase, l.After(other, errors.New("the API server said no"), 2*time.Second),
		"any other failure waits its backoff alone, however long it took")
	now = now.Add(time.Minute)
	assert.Equal(t, 2*retryBase, l.After(heavy, stopped, time.Millisecond), "a quick one waits its backoff, which still grows")
}

// A namespace's many instances stopped by limits take turns: each retry
// is paced after the previous one of its namespace, so together they hold
// a tenth of a worker's time, and another namespace's are not paced behind
// them.
func TestRetriesAfterALimitArePacedPerNamespace(t *testing.T) {
	l := newRetries()
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	var waits []time.Duration
	for i := range 16 {
		waits = append(waits, l.After(req("", "heavy", fmt.Sprint(i)), ErrStoppedByLimit, 2*time.Second))
	}
	for i, w := range waits {
		assert.Equal(t, time.Duration(i+1)*20*time.Second, w, "retry %d of the heavy namespace", i)
	}
	assert.Equal(t, 20*time.Second, l.After(req("", "benign", "app"), ErrStoppedByLimit, 2*time.Second),
		"another namespace is paced on its own")
	assert.Equal(t, 20*time.Second, l.After(req("other", "heavy", "0"), ErrStoppedByLimit, 2*time.Second),
		"and so is the same namespace on another cluster")

	now = now.Add(time.Hour)
	l.When(req("", "benign", "app2"))
	l.mu.Lock()
	assert.Empty(t, l.paced, "paces that have passed are dropped")
	l.mu.Unlock()
}

// admitN admits n requests of ns, named prefix-i, and returns how many
// started.
func admitN(l *Slots, ns string, n, limit int, spans bool) int {
	started := 0
	for i := range n {
		if l.Admit(req("", ns, fmt.Sprintf("%s-%d", ns, i)), limit, spans) {
			started++
		}
	}
	return started
}

func TestOneNamespaceAloneUsesTheWholeShare(t *testing.T) {
	l := NewSlots()
	assert.Equal(t, 8, admitN(l, "only", 500, 8, false))
	assert.Equal(t, 8, l.busy)
}

func TestASlotIsKeptForANamespaceWithNothingInFlight(t *testing.T) {
	l := NewSlots()
	assert.Equal(t, 7, admitN(l, "heavy", 16, 8, true), "a namespace with work in flight leaves the last slot")
	assert.True(t, l.Admit(req("", "benign", "app"), 8, true), "a namespace with nothing in flight starts at once")
	assert.False(t, l.Admit(req("", "third", "app"), 8, true), "the share is full")

	// A heavy reconcile ends: the namespace with nothing in flight goes
	// first, and heavy does not get back above its share (8/3, rounded up).
	l.Done("heavy")
	next := l.Unpark(8, true)
	assert.Equal(t, []types.NamespacedName{{Namespace: "third", Name: "app"}}, next)
	require.True(t, l.Admit(req("", "third", "app"), 8, true))
	for range 3 {
		l.Done("heavy")
		assert.Empty(t, l.Unpark(8, true), "heavy stays parked while above its share")
	}
	l.Done("heavy")
	assert.Equal(t, []types.NamespacedName{{Namespace: "heavy", Name: "heavy-7"}}, l.Unpark(8, true),
		"below its share of 3, heavy goes on, oldest first")
}

func TestNamespacesShareTheClusterShareEvenly(t *testing.T) {
	l := NewSlots()
	assert.Equal(t, 1, admitN(l, "a", 10, 2, true), "one of two slots for a namespace with work in flight")
	assert.Equal(t, 1, admitN(l, "b", 10, 2, true))
	l.Done("a")
	next := l.Unpark(2, true)
	require.Len(t, next, 1)
	assert.Equal(t, "a", next[0].Namespace, "a has nothing in flight now: it goes first")
}

// With one slot (many clusters share few workers), namespaces take turns.
func TestWithOneSlotNamespacesTakeTurns(t *testing.T) {
	l := NewSlots()
	require.Equal(t, 1, admitN(l, "a", 3, 1, true))
	require.Equal(t, 0, admitN(l, "b", 3, 1, true))
	l.Done("a")
	next := l.Unpark(1, true)
	require.Len(t, next, 1)
	assert.Equal(t, "b", next[0].Namespace)
}

// Whatever the order of admits and ends, no request stays parked once
// nothing is in flight, every request runs, and no namespace ever has more
// in flight than the share allows.
func TestParkedRequestsAlwaysRunInTheEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		limit := 1 + rng.IntN(8)
		l := NewSlots()
		queue := []mcreconcile.Request{}
		for i := range 50 {
			queue = append(queue, req("", fmt.Sprintf("ns%d", rng.IntN(4)), fmt.Sprint(i)))
		}
		var running []mcreconcile.Request
		ran := map[types.NamespacedName]bool{}
		// Events queue some requests again while they are parked.
		for range 10 {
			queue = append(queue, queue[rng.IntN(len(queue))])
		}
		for len(queue) > 0 || len(running) > 0 {
			if len(queue) > 0 && (len(running) == 0 || rng.IntN(2) == 0) {
				r := queue[0]
				queue = queue[1:]
				if slices.Contains(running, r) {
					continue // the work queue never hands out a request twice at once
				}
				if l.Admit(r, limit, true) {
					running = append(running, r)
					ran[r.NamespacedName] = true
				}
				require.LessOrEqual(t, l.busy, limit, "round %d", round)
				continue
			}
			i := rng.IntN(len(running))
			r := running[i]
			running = append(running[:i], running[i+1:]...)
			l.Done(r.Namespace)
			for _, name := range l.Unpark(limit, true) {
				queue = append(queue, mcreconcile.Request{Request: reconcile.Request{NamespacedName: name}})
			}
		}
		assert.Len(t, ran, 50, "round %d: every request ran", round)
		assert.True(t, l.Idle(), "round %d: nothing left parked", round)
	}
}
