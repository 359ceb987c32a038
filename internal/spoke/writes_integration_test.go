//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/internal/spoke"
)

// writesInstances is how many instances TestOwnWritesAreNotKeptOnceDelivered
// creates at once: enough that the watch often delivers a status write
// before the write's own answer comes back.
const writesInstances = 200

// The runtime keeps a copy of each instance it wrote only until the watch
// delivers that version. When the watch delivered it before the write's
// answer came back, the copy was kept for as long as the instance lived:
// 1,000 instances held about 4 MiB more than they should (heap per
// instance 14 KiB instead of 8). Once every instance is ACTIVE and the
// watch caught up, no copy is left.
func TestOwnWritesAreNotKeptOnceDelivered(t *testing.T) {
	rgd, err := os.ReadFile(filepath.Join("testdata", "webapp-rgd.yaml"))
	require.NoError(t, err)
	c, g, rt := servedOnOneSpoke(t, "echoes", string(rgd))
	ctx := context.Background()
	name := func(i int) string { return fmt.Sprintf("echo-%d", i) }
	parallel(t, writesInstances, func(i int) error {
		return c.Create(ctx, newInstance(g, "echoes", name(i), map[string]any{"name": name(i)}))
	})
	for i := range writesInstances {
		stateIs(t, c, g, "echoes", name(i), "ACTIVE")
	}
	require.Eventually(t, func() bool { return spoke.RememberedWrites(rt, g.Name) == 0 }, 20*time.Second, 50*time.Millisecond,
		"copies of our writes kept after the watch delivered them: %d", spoke.RememberedWrites(rt, g.Name))
}
