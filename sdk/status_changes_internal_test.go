package sdk

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatusChangesLoseNoneOfABurst: changes to 1,000 graphs, three each,
// made at once while the RGD controller takes none, all wait for it, each
// graph once, behind a single wake-up; the 64-slot channel they replaced
// dropped all but 64.
func TestStatusChangesLoseNoneOfABurst(t *testing.T) {
	c := newStatusChanges()
	const graphs = 1000
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for i := range graphs {
				c.notify(fmt.Sprintf("graph-%d", i))
			}
		})
	}
	wg.Wait()

	requireReady(t, c, true)
	requireReady(t, c, false)
	names := c.Take()
	assert.Len(t, names, graphs, "each graph waits once")
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for i := range graphs {
		assert.True(t, seen[fmt.Sprintf("graph-%d", i)], "graph-%d waits", i)
	}

	assert.Empty(t, c.Take(), "taken names are forgotten")
	requireReady(t, c, false)
	c.notify("graph-7")
	requireReady(t, c, true)
	assert.Equal(t, []string{"graph-7"}, c.Take(), "a graph changed again after it was taken waits again")
}

// requireReady checks whether c has a wake-up pending, and consumes it.
func requireReady(t *testing.T, c *statusChanges, want bool) {
	t.Helper()
	select {
	case <-c.Ready():
		require.True(t, want, "no wake-up expected")
	default:
		require.False(t, want, "a wake-up expected")
	}
}
