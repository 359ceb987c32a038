//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// leakClusters is how many simulated clusters TestAStoppedHubLeavesNoGoroutine
// engages, and leakInstances how many of them get an instance.
const (
	leakClusters  = 1000
	leakInstances = 20
)

// A hub that served a thousand clusters leaves no goroutine behind once it
// stops: every informer, watch, worker, probe and engagement it started for
// a cluster ends with it. The clusters are simulated (a namespace each on
// one API server, each with its own informers over one shared connection,
// as BenchmarkFleet's "shared" mode), so that what the hub starts per
// cluster is all there a thousand times; some get an instance, so that
// reconciling ran too. Only apimachinery's known watch.Filter leak and
// controller-runtime's handler-sync wait on an informer stopped before it
// synced are ignored (upstreamWatchLeak, upstreamHandlerLeak).
//
// What a stopped hub leaves is net/http's pool: HTTP/2 connections, one
// reading goroutine each, about one per hundred watches the fleet had
// open (20 at 1,000 clusters), which end at their idle timeout, 90 s on.
// The pool belongs to whoever made the HTTP client, here the test (its
// SharedConnection; client-go gives the hub's manager the same cached
// transport for this server and identity): the test closes what is idle
// until nothing is left. A connection whose stopped watch is still being
// torn down is not idle yet, hence the repeat.
func TestAStoppedHubLeavesNoGoroutine(t *testing.T) {
	fleet, c, names := startFleetNamespaces(t, leakClusters)
	ctx := context.Background()
	before := goleak.IgnoreCurrent()

	shared, err := fgtesting.NewSharedConnection(fleet.Hub.Config)
	require.NoError(t, err)
	provider := fgtesting.NewProvider()
	h, err := sdk.NewHub(provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, err)
	stop := fgtesting.StartStoppable(t, func(ctx context.Context) error { return h.Run(ctx, fleet.Hub.Config) })
	gvk := schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "LeakCheck"}
	kinds := []schema.GroupVersionKind{gvk}
	require.NoError(t, h.RegisterGraph(ctx, oneConfigMapRGD(t, gvk.Kind)))
	require.NoError(t, provider.AddSimulated(ctx, fleet.Hub.Config, names, shared))
	go createFleetInstances(ctx, c, kinds, names[:leakInstances])
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, leakClusters, countServed(h, kinds), "clusters served")
		assert.Equal(ct, leakInstances, countActiveAll(ctx, c, kinds), "instances ACTIVE")
	}, fleetLeakWait, tick)
	require.Greater(t, runtime.NumGoroutine(), 10*leakClusters, "the clusters' informers run")

	stop()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		shared.CloseIdleConnections()
		err := goleak.Find(before, upstreamWatchLeak, upstreamHandlerLeak)
		assert.NoError(ct, err, "goroutines left, by the function on top and where each was created:\n%s", leftBySite(err))
	}, wait, tick)
	t.Logf("apimachinery's watch.Filter goroutines left (ignored): %d", countTop("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"))
}

// fleetLeakWait bounds how long a thousand simulated clusters may take to
// be served on a loaded machine.
const fleetLeakWait = 5 * wait

var (
	goroutineHead = regexp.MustCompile(`Goroutine \d+ in state [^,]*, with (\S+) on top of the stack`)
	createdBy     = regexp.MustCompile(`created by (\S+)`)
)

// leftBySite summarises goleak's error: how many goroutines are left per
// function on top of their stack and function that created them.
func leftBySite(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	heads := goroutineHead.FindAllStringSubmatchIndex(msg, -1)
	counts := map[string]int{}
	for i, h := range heads {
		end := len(msg)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		site := "?"
		if m := createdBy.FindStringSubmatch(msg[h[1]:end]); m != nil {
			site = m[1]
		}
		counts[msg[h[2]:h[3]]+" <- "+site]++
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%5d %s", n, k))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// countTop counts the goroutines whose stack has fn on top.
func countTop(fn string) int {
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.SplitN(g, "\n", 3)
		if len(lines) > 1 && strings.HasPrefix(lines[1], fn+"(") {
			n++
		}
	}
	return n
}
