package hub

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A cluster where a graph's CRD cannot go (another manager owns a CRD of
// that name) is retried with backoff; it is logged at the default level
// when its state changes, and each retry that ends the same way at V(1).
func TestFanOutLogsAFailureOncePerChangeOfState(t *testing.T) {
	ctx := context.Background()
	g := webAppGraph("fanout-log")
	cl := fgtesting.NewFakeCluster(fgtesting.FakeClusterOptions{})
	t.Cleanup(cl.Close)
	theirs := g.CRD.DeepCopy()
	theirs.Labels = map[string]string{v1alpha1.LabelManagedBy: "someone-else"}
	require.NoError(t, cl.GetClient().Create(ctx, theirs))

	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(args, "CRD not ready on cluster") {
			level, _, _ := strings.Cut(args, " ")
			lines = append(lines, level)
		}
	}, funcr.Options{Verbosity: 1})
	f := New(Options{Logger: logger})
	engage(t, f, "fanout-log", cl)
	for range 3 {
		require.ErrorIs(t, f.Ensure(ctx, "fanout-log", g), ErrConflict)
	}
	assert.Equal(t, []string{`"level"=0`, `"level"=1`, `"level"=1`}, lines)
}
