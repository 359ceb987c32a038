package rgd

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// changeSet is a Changes as the hub's: each name once, one wake-up slot.
type changeSet struct {
	mu    sync.Mutex
	names map[string]bool
	ready chan struct{}
}

func (c *changeSet) notify(name string) {
	c.mu.Lock()
	c.names[name] = true
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

func (c *changeSet) Ready() <-chan struct{} { return c.ready }

func (c *changeSet) Take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n := range c.names {
		out = append(out, n)
	}
	clear(c.names)
	return out
}

// TestForwardPassesEveryChange: the controller's forwarder, held up by a
// controller that takes none of its events, passes on every one of a
// burst of changes to 1,000 graphs once it is read, and the changes made
// while it passed them on.
func TestForwardPassesEveryChange(t *testing.T) {
	changes := &changeSet{names: map[string]bool{}, ready: make(chan struct{}, 1)}
	r := &Reconciler{Changed: changes}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan event.GenericEvent)
	done := make(chan struct{})
	go func() { defer close(done); r.forward(ctx, out) }()
	t.Cleanup(func() { cancel(); <-done })

	const graphs = 1000
	for i := range graphs {
		changes.notify(fmt.Sprintf("graph-%d", i))
	}
	got := map[string]bool{}
	deadline := time.After(30 * time.Second)
	for len(got) < graphs+1 {
		select {
		case e := <-out:
			got[e.Object.GetName()] = true
			if len(got) == graphs/2 {
				changes.notify("late")
			}
		case <-deadline:
			require.FailNow(t, "changes lost", "%d of %d graphs passed on", len(got), graphs+1)
		}
	}
	require.True(t, got["late"], "a change made while the forwarder passed others on")
}
