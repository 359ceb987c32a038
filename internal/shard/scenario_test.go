package shard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/shard"
)

// ledger is what every replica serves, kept by an aware each replica
// engages: a cluster started while another replica's serving context is
// still live is an overlap.
type ledger struct {
	mu       sync.Mutex
	holder   map[string]string
	holdCtx  map[string]context.Context
	overlaps []string
	moves    int
}

func newLedger() *ledger {
	return &ledger{holder: map[string]string{}, holdCtx: map[string]context.Context{}}
}

// served returns, per replica, how many clusters it serves now.
func (l *ledger) served() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for name, id := range l.holder {
		if l.holdCtx[name].Err() == nil {
			out[id]++
		}
	}
	return out
}

func (l *ledger) total() int {
	n := 0
	for _, c := range l.served() {
		n += c
	}
	return n
}

func (l *ledger) overlapsSeen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.overlaps...)
}

// recorder is one replica's aware.
type recorder struct {
	id string
	l  *ledger
}

func (r recorder) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.holder[string(name)]; ok && prev != r.id {
		if l.holdCtx[string(name)].Err() == nil {
			l.overlaps = append(l.overlaps, fmt.Sprintf("%s started %s while %s served it", r.id, name, prev))
		}
		l.moves++
	}
	l.holder[string(name)], l.holdCtx[string(name)] = r.id, ctx
	return nil
}

// replica is one coordinator with the recorder, engaged with every
// cluster; cut makes every request of its client fail from then on.
type replica struct {
	id     string
	cut    *atomic.Bool
	stop   context.CancelFunc
	done   chan struct{}
	coords *shard.Coordinator
}

func startReplica(t *testing.T, base client.Client, id string, o shard.Options, clusters int, l *ledger) *replica {
	t.Helper()
	cut := &atomic.Bool{}
	refuse := func() error {
		if cut.Load() {
			return errors.New("cut off from the hub")
		}
		return nil
	}
	c := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := refuse(); err != nil {
				return err
			}
			return c.Get(ctx, k, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := refuse(); err != nil {
				return err
			}
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := refuse(); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := refuse(); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	o.ID = id
	coord := shard.NewCoordinator(c, o)
	coord.AddAware(recorder{id: id, l: l})
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{id: id, cut: cut, stop: cancel, done: make(chan struct{}), coords: coord}
	go func() {
		defer close(r.done)
		_ = coord.Runnable().Start(ctx)
	}()
	for i := range clusters {
		require.NoError(t, coord.Engage(ctx, multicluster.ClusterName(fmt.Sprintf("cluster-%d", i)), nil))
	}
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// testOptions are short timings: a 3 s Lease renewed every second,
// decisions every 250 ms.
func testOptions() shard.Options {
	return shard.Options{Namespace: "default", LeaseDuration: 3 * time.Second, RenewInterval: time.Second, Probe: 250 * time.Millisecond}
}

// every waits until every one of n clusters is served, by the replicas
// named alone, and returns how long it took.
func every(t *testing.T, l *ledger, n int, within time.Duration, by ...string) time.Duration {
	t.Helper()
	start := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got := l.served()
		sum := 0
		for _, id := range by {
			sum += got[id]
		}
		assert.Equal(c, n, sum, "served by %v: %v", by, got)
		assert.Equal(c, n, l.total(), "served: %v", got)
	}, within, 20*time.Millisecond)
	return time.Since(start)
}

// runFleetScenario drives replicas over one hub client: a cold start, a
// replica joining, one cut off from the hub, one stopping cleanly, and a
// cluster the provider lets go. No cluster may ever be served by two
// replicas at once.
func runFleetScenario(t *testing.T, hub client.Client) {
	const clusters = 300
	o := testOptions()
	l := newLedger()
	rs := []*replica{}
	start := time.Now()
	for i := range 3 {
		rs = append(rs, startReplica(t, hub, fmt.Sprintf("replica-%d", i), o, clusters, l))
	}
	cold := every(t, l, clusters, 10*time.Second, "replica-0", "replica-1", "replica-2")
	require.Eventually(t, func() bool {
		got := l.served()
		return got["replica-0"] > 0 && got["replica-1"] > 0 && got["replica-2"] > 0 && l.total() == clusters
	}, 10*time.Second, 20*time.Millisecond, "every replica gets a share")
	l.mu.Lock()
	coldMoves := l.moves
	l.mu.Unlock()
	t.Logf("cold start: %d clusters served in %s; shared by 3 replicas after %s, %d hand-overs: %v", clusters, cold, time.Since(start), coldMoves, l.served())

	rs = append(rs, startReplica(t, hub, "replica-3", o, clusters, l))
	require.Eventually(t, func() bool { return l.served()["replica-3"] > 0 }, 10*time.Second, 20*time.Millisecond, "a joining replica gets a share")
	every(t, l, clusters, 10*time.Second, "replica-0", "replica-1", "replica-2", "replica-3")
	t.Logf("after a join: %v", l.served())

	cutAt := time.Now()
	rs[0].cut.Store(true)
	took := every(t, l, clusters, o.TakeoverBound()+5*time.Second, "replica-1", "replica-2", "replica-3")
	t.Logf("replica-0 cut off: its clusters served again after %s (bound %s): %v", time.Since(cutAt), o.TakeoverBound(), l.served())
	assert.LessOrEqual(t, took, o.TakeoverBound(), "a replica cut off from the hub is taken over within the bound")

	stopAt := time.Now()
	rs[1].stop()
	<-rs[1].done
	every(t, l, clusters, o.LeaseDuration, "replica-2", "replica-3")
	t.Logf("replica-1 stopped: handed over in %s (its Lease would have lasted %s)", time.Since(stopAt), o.LeaseDuration)

	rs[0].cut.Store(false)
	require.Eventually(t, func() bool { return l.served()["replica-0"] > 0 }, 10*time.Second, 20*time.Millisecond, "a replica that reaches the hub again gets a share again")
	every(t, l, clusters, 10*time.Second, "replica-0", "replica-2", "replica-3")

	overlaps := l.overlapsSeen()
	assert.Empty(t, overlaps[:min(len(overlaps), 5)], "no cluster is ever served by two replicas at once (%d overlaps)", len(overlaps))
	t.Logf("%d hand-overs, %d overlapping", l.moves, len(overlaps))
}

// TestReplicasShareTheFleetAndNeverServeAClusterTwice, on the fake
// client; and the stopped coordinators leave no goroutine behind.
func TestReplicasShareTheFleetAndNeverServeAClusterTwice(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs last: after every replica stopped
	runFleetScenario(t, fakeHub())
}
