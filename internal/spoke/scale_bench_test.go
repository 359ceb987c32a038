//go:build integration

package spoke_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// BenchmarkWebAppScale serves 1,000 and then 5,000 WebApp instances (the
// reference workload, /work/shared/bench) on one spoke in single-cluster
// mode, its cache trimmed with spoke.TrimCache, and reports, once all are
// ACTIVE, what the hub process holds after a
// GC: heap per instance (heap-KiB/instance, over the heap before the first
// instance) and RSS (rss-MiB). Then it deletes them all and reports how long
// the runtime took until every instance was gone (delete-s), whose growth
// from 1,000 to 5,000 should be linear. Run it with -benchtime 1x.
func BenchmarkWebAppScale(b *testing.B) {
	rgd, err := os.ReadFile(filepath.Join("testdata", "webapp-rgd.yaml"))
	require.NoError(b, err)
	g := compile(b, string(rgd))
	for _, n := range []int{1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				scaleRound(b, g, n)
			}
		})
	}
}

func scaleRound(b *testing.B, g *graph.Graph, n int) {
	b.StopTimer()
	srv, err := fgtesting.StartCluster("scale", fgtesting.ClusterOptions{
		APIServerFlags: map[string]string{"service-cluster-ip-range": "10.96.0.0/16"},
	})
	require.NoError(b, err)
	defer func() { _ = srv.Stop() }()
	c := newClient(b, srv.Config)
	installCRD(b, c, g)
	createNamespace(b, c, "scale")
	installAdmissionPolicy(b, c, g, map[string]any{"name": "probe"})

	// The spoke's cache is trimmed as the runtime recommends (TrimCache).
	ctx, rt, stop := serveSingleCluster(b, srv.Config, g, spoke.TrimCache)
	defer stop()
	before, err := fgtesting.MeasureFootprint()
	require.NoError(b, err)
	heap0 := before.HeapAlloc
	b.StartTimer()

	start := time.Now()
	parallel(b, n, func(i int) error {
		return c.Create(ctx, newInstance(g, "scale", appName(i), map[string]any{"name": appName(i)}))
	})
	waitCounts(b, rt, g, func(cnt spoke.Count) bool { return cnt.Ready == n })
	active := time.Since(start)
	after, err := fgtesting.MeasureFootprint()
	require.NoError(b, err)
	heap, rss := after.HeapAlloc, after.RSS
	writeHeapProfile(b, n)
	perInstance := float64(heap-heap0) / float64(n) / 1024
	b.ReportMetric(perInstance, "heap-KiB/instance")
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
	b.ReportMetric(active.Seconds(), "active-s")

	start = time.Now()
	parallel(b, n, func(i int) error {
		return client.IgnoreNotFound(c.Delete(ctx, newInstance(g, "scale", appName(i), nil)))
	})
	waitCounts(b, rt, g, func(cnt spoke.Count) bool { return cnt.Total == 0 })
	deleted := time.Since(start)
	b.ReportMetric(deleted.Seconds(), "delete-s")
	fmt.Printf("%d instances: ACTIVE in %s; heap %.1f KiB/instance (%.0f MiB over %.0f MiB before), RSS %.0f MiB after GC; all deleted in %s\n",
		n, active.Round(time.Millisecond), perInstance, float64(heap-heap0)/(1<<20), float64(heap0)/(1<<20),
		float64(rss)/(1<<20), deleted.Round(time.Millisecond))
	fmt.Printf("reconciles/instance, creating and deleting: %s\n", reconciles(n))
}

// writeHeapProfile writes a heap profile to $FLEETGRAPH_HEAP_PROFILE-<n>
// if that variable is set, to see what the instances cost.
func writeHeapProfile(b *testing.B, n int) {
	base := os.Getenv("FLEETGRAPH_HEAP_PROFILE")
	if base == "" {
		return
	}
	f, err := os.Create(fmt.Sprintf("%s-%d", base, n))
	require.NoError(b, err)
	defer f.Close()
	require.NoError(b, pprof.WriteHeapProfile(f))
}

// waitCounts polls the runtime's count of the graph's instances until ok.
func waitCounts(b *testing.B, rt *spoke.Runtime, g *graph.Graph, ok func(spoke.Count) bool) {
	deadline := time.Now().Add(15 * time.Minute)
	for !ok(rt.Counts(g.Name)[""]) {
		require.True(b, time.Now().Before(deadline), "counts: %v", rt.Counts(g.Name))
		time.Sleep(50 * time.Millisecond)
	}
}
