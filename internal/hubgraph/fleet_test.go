package hubgraph

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// relabelledClusters is a fakeClusters whose labels a test changes while
// watchFleet reads them.
type relabelledClusters struct {
	fakeClusters
	mu sync.Mutex
}

func (r *relabelledClusters) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fakeClusters.Names()
}

func (r *relabelledClusters) Labels(name string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.labels[name])
}

func (r *relabelledClusters) set(name string, labels map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.labels[name] = labels
}

// A notice makes watchFleet look at once, with its poll far off; one that
// changed nothing the fleet variable shows requeues nothing.
func TestWatchFleetFollowsNotices(t *testing.T) {
	c := &relabelledClusters{fakeClusters: fakeClusters{labels: map[string]map[string]string{"a": {"mesh": "true"}, "b": nil}}}
	notice := make(chan struct{}, 1)
	requeued := make(chan struct{}, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchFleet(ctx, c, nil, time.Hour, notice, func() { requeued <- struct{}{} })
	}()

	// tell sends a notice and returns once watchFleet took it: it has
	// then acted on every notice before.
	tell := func() {
		notice <- struct{}{}
		require.Eventually(t, func() bool { return len(notice) == 0 }, 10*time.Second, time.Millisecond)
	}
	tell()
	tell() // the first, of nothing changed, was acted on
	assert.Empty(t, requeued, "a notice that changed nothing requeues nothing")
	c.set("b", map[string]string{"mesh": "true"})
	tell() // b labelled in
	select {
	case <-requeued:
	case <-time.After(10 * time.Second):
		require.Fail(t, "a notice of a relabel requeues the graph without waiting for the poll")
	}
	tell()
	tell() // nothing changed since
	cancel()
	<-done
	assert.Empty(t, requeued, "one requeue for one change")
}
