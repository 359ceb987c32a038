//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// BenchmarkWebAppScale serves 1,000 and then 5,000 WebApp instances (the
// reference workload, /work/shared/bench) on one spoke in single-cluster
// mode, its cache trimmed with cacheopts.TrimCache, and reports, once all are
// ACTIVE, what the hub process holds after a
// GC: heap per instance (heap-KiB/instance, over the heap before the first
// instance) and RSS (rss-MiB). Then it deletes them all and reports how long
// the runtime took until every instance was gone (delete-s), whose growth
// from 1,000 to 5,000 should be linear. Run it with -benchtime 1x.
func BenchmarkWebAppScale(b *testing.B) {
	rgd, err := os.ReadFile(filepath.Join("testdata", "webapp-rgd.yaml"))
	require.NoError(b, err)
	g := compile(b, string(rgd))
	for _, n := range scaleSizes(b) {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				scaleRound(b, g, n)
			}
		})
	}
}

// scaleSizes are the instance counts of BenchmarkWebAppScale: 1,000 and
// 5,000, or the comma-separated list in $FLEETGRAPH_SCALE_SIZES (a smaller
// size while iterating).
func scaleSizes(b *testing.B) []int {
	env := os.Getenv("FLEETGRAPH_SCALE_SIZES")
	if env == "" {
		return []int{1000, 5000}
	}
	var sizes []int
	for f := range strings.SplitSeq(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, "FLEETGRAPH_SCALE_SIZES")
		sizes = append(sizes, n)
	}
	return sizes
}

func scaleRound(b *testing.B, g *graph.Graph, n int) {
	b.StopTimer()
	if os.Getenv("FLEETGRAPH_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 1024 // fine enough to attribute KiB per instance
	}
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
	ctx, rt, stop := serveSingleCluster(b, srv.Config, g, cacheopts.TrimCache)
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

	stopProfiles := startProfiles(b, n)
	start = time.Now()
	parallel(b, n, func(i int) error {
		return client.IgnoreNotFound(c.Delete(ctx, newInstance(g, "scale", appName(i), nil)))
	})
	waitCounts(b, rt, g, func(cnt spoke.Count) bool { return cnt.Total == 0 })
	deleted := time.Since(start)
	stopProfiles()
	b.ReportMetric(deleted.Seconds(), "delete-s")
	b.StopTimer()
	floor := deletionFloor(b, c, n)
	b.ReportMetric(floor.Seconds(), "floor-delete-s")
	fmt.Printf("%d instances: ACTIVE in %s; heap %.1f KiB/instance (%.0f MiB over %.0f MiB before), RSS %.0f MiB after GC; all deleted in %s (floor %s, %.2fx)\n",
		n, active.Round(time.Millisecond), perInstance, float64(heap-heap0)/(1<<20), float64(heap0)/(1<<20),
		float64(rss)/(1<<20), deleted.Round(time.Millisecond), floor.Round(time.Millisecond), deleted.Seconds()/floor.Seconds())
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

// deletionFloor is what the API server alone needs for the writes of deleting
// n instances: per instance, an object with a finalizer and three children
// (ConfigMaps, created untimed) are deleted and the finalizer is removed
// by a trivial loop, as fast as the same concurrency allows. It returns
// the time until all of them are gone.
func deletionFloor(b *testing.B, c client.Client, n int) time.Duration {
	ctx := context.Background()
	createNamespace(b, c, "floor")
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "floor", Name: name}}
	}
	parallel(b, n, func(i int) error {
		parent := cm(appName(i))
		parent.Finalizers = []string{"bench.fleetgraph.dev/floor"}
		if err := c.Create(ctx, parent); err != nil {
			return err
		}
		for k := range 3 {
			if err := c.Create(ctx, cm(fmt.Sprintf("%s-%d", appName(i), k))); err != nil {
				return err
			}
		}
		return nil
	})
	start := time.Now()
	parallel(b, n, func(i int) error {
		if err := c.Delete(ctx, cm(appName(i))); err != nil {
			return err
		}
		for k := range 3 {
			if err := c.Delete(ctx, cm(fmt.Sprintf("%s-%d", appName(i), k))); err != nil {
				return err
			}
		}
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		return c.Patch(ctx, cm(appName(i)), client.RawPatch(types.MergePatchType, patch))
	})
	list := &corev1.ConfigMapList{}
	require.NoError(b, c.List(ctx, list, client.InNamespace("floor")))
	require.Empty(b, list.Items, "every object of the floor is gone")
	return time.Since(start)
}

// startProfiles starts a CPU profile, and mutex and block profiling, if
// $FLEETGRAPH_CPU_PROFILE is set, to see where deleting n instances goes;
// the returned func writes them to $FLEETGRAPH_CPU_PROFILE-{cpu,mutex,block}-<n>.
func startProfiles(b *testing.B, n int) func() {
	base := os.Getenv("FLEETGRAPH_CPU_PROFILE")
	if base == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s-cpu-%d", base, n))
	require.NoError(b, err)
	require.NoError(b, pprof.StartCPUProfile(f))
	runtime.SetMutexProfileFraction(10)
	runtime.SetBlockProfileRate(int(time.Millisecond))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(b, f.Close())
		for _, name := range []string{"mutex", "block"} {
			out, err := os.Create(fmt.Sprintf("%s-%s-%d", base, name, n))
			require.NoError(b, err)
			require.NoError(b, pprof.Lookup(name).WriteTo(out, 0))
			require.NoError(b, out.Close())
		}
		runtime.SetMutexProfileFraction(0)
		runtime.SetBlockProfileRate(0)
	}
}
