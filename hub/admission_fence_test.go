package hub

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A removal waits for the activation in flight and keeps every Ensure that
// began before it from activating; an Ensure that begins after it
// activates as usual.
func TestFenceKeepsRemovedPoliciesRemoved(t *testing.T) {
	var fc fence
	key := fenceKey{cluster: "c", graph: "g"}
	stale := fc.begin() // an Ensure still running when the removal comes
	running := make(chan struct{})
	var ended atomic.Bool
	fc.start(context.Background(), key, fc.begin(), func(ctx context.Context) {
		close(running)
		<-ctx.Done()
		ended.Store(true)
	})
	<-running

	fc.stop(key)
	assert.True(t, ended.Load(), "stop returns only once the activation in flight has ended")

	var staleRan, freshRan atomic.Bool
	fc.start(context.Background(), key, stale, func(context.Context) { staleRan.Store(true) })
	fresh := fc.begin()
	done := make(chan struct{})
	fc.start(context.Background(), key, fresh, func(context.Context) { freshRan.Store(true); close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		require.Fail(t, "the activation of an Ensure begun after the removal never ran")
	}
	assert.False(t, staleRan.Load(), "an Ensure begun before the removal must not put the policy back")
	assert.True(t, freshRan.Load())
}

// A second activation of the same graph on the same cluster waits for the
// first one to end, which it cancels: two never apply at once.
func TestFenceRunsOneActivationAtATime(t *testing.T) {
	var fc fence
	key := fenceKey{cluster: "c", graph: "g"}
	var inFlight, most atomic.Int32
	done := make(chan struct{}, 2)
	activate := func(ctx context.Context) {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
		inFlight.Add(-1)
		done <- struct{}{}
	}
	fc.start(context.Background(), key, fc.begin(), activate)
	fc.start(context.Background(), key, fc.begin(), activate)
	for range 2 {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			require.Fail(t, "an activation never ended")
		}
	}
	assert.Equal(t, int32(1), most.Load())
}
