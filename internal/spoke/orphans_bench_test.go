//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	// orphanBenchGrace is the collector's grace in the benchmark.
	orphanBenchGrace = time.Second
	// orphanBenchIdle is how long the steady state is watched.
	orphanBenchIdle = 10 * time.Second
)

// BenchmarkOrphans500 measures what collecting orphans costs with the
// reference workload (500 WebApp instances, 1,500 children) on one spoke:
//
//   - at steady state, with all 500 ACTIVE and nothing to collect: the
//     runtime's requests and CPU over orphanBenchIdle, with the collector
//     on and, as the floor, off;
//   - when every instance loses its finalizer by hand and goes: the time
//     from the first of those deletes until the last child is gone (the
//     grace included), and the runtime's requests per child, against the
//     floor of a client deleting the same 2,000 objects directly at
//     concurrency 8 on the same API server.
func BenchmarkOrphans500(b *testing.B) {
	rgd, err := os.ReadFile(filepath.Join("testdata", "webapp-rgd.yaml"))
	require.NoError(b, err)
	g := compile(b, string(rgd))
	for i := range b.N {
		b.StopTimer()
		srv, err := fgtesting.StartCluster("orphans", fgtesting.ClusterOptions{
			APIServerFlags: map[string]string{"service-cluster-ip-range": "10.96.0.0/16"},
		})
		require.NoError(b, err)
		c := newClient(b, srv.Config)
		installCRD(b, c, g)
		createNamespace(b, c, "floor")
		b.StartTimer()

		applyFloor(b, newRoundClients(b, srv, g), g, "floor")
		start := time.Now()
		deleteFloor(b, c, g, "floor")
		floor := time.Since(start)

		off := idleCost(b, srv.Config, c, g, "idle-off", -1)
		on := idleCost(b, srv.Config, c, g, "idle-on", orphanBenchGrace)
		collect, reqs, cpu := collectCost(b, srv.Config, c, g, "orphans")
		children := 3 * benchInstances
		fmt.Printf("round %d: steady state over %s: %d requests, %.3f CPU-s with the collector (off: %d requests, %.3f CPU-s)\n",
			i+1, orphanBenchIdle, on.reqs, on.cpu, off.reqs, off.cpu)
		fmt.Printf("round %d: 500 instances unstuck and deleted and their %d orphans collected in %s (grace %s), %.2f requests/child, %.2f CPU-s; floor: %d objects deleted directly in %s\n",
			i+1, children, collect.Round(time.Millisecond), orphanBenchGrace, float64(reqs)/float64(children), cpu,
			4*benchInstances, floor.Round(time.Millisecond))
		b.ReportMetric(float64(on.reqs), "idle-requests")
		b.ReportMetric(on.cpu, "idle-cpu-s")
		b.ReportMetric(off.cpu, "idle-cpu-s-off")
		b.ReportMetric(collect.Seconds(), "collect-s")
		b.ReportMetric(floor.Seconds(), "floor-delete-s")
		b.ReportMetric(float64(reqs)/float64(children), "requests/child")
		b.StopTimer()
		require.NoError(b, srv.Stop())
		b.StartTimer()
	}
}

type idle struct {
	reqs int64
	cpu  float64
}

// idleCost makes 500 instances ACTIVE in ns with a runtime whose grace is
// grace, then measures its requests and CPU while nothing happens. The
// instances are deleted again (finalized by the runtime) before it stops.
func idleCost(b *testing.B, cfg *rest.Config, c client.Client, g *graph.Graph, ns string, grace time.Duration) idle {
	createNamespace(b, c, ns)
	var n atomic.Int64
	ctx, rt, stop := serveForOrphans(b, counted(cfg, &n), g, grace)
	defer stop()
	createActive(b, ctx, c, rt, g, ns)
	cpu := cpuMeter()
	n.Store(0)
	cpu0 := cpu()
	time.Sleep(orphanBenchIdle) // the measurement window, not a wait for anything
	out := idle{reqs: n.Load(), cpu: cpu().sub(cpu0).self}
	parallel(b, benchInstances, func(i int) error {
		return c.Delete(ctx, newInstance(g, ns, appName(i), nil))
	})
	waitUntil(b, func() bool { return rt.Counts(g.Name)[""].Total == 0 })
	return out
}

// collectCost makes 500 instances ACTIVE in ns, then removes their
// finalizers by hand and deletes them, and measures how long it takes
// until the runtime has collected all their children, with the runtime's
// requests and the process's CPU meanwhile.
func collectCost(b *testing.B, cfg *rest.Config, c client.Client, g *graph.Graph, ns string) (time.Duration, int64, float64) {
	createNamespace(b, c, ns)
	var n atomic.Int64
	ctx, rt, stop := serveForOrphans(b, counted(cfg, &n), g, orphanBenchGrace)
	defer stop()
	createActive(b, ctx, c, rt, g, ns)
	cpu := cpuMeter()
	n.Store(0)
	cpu0 := cpu()
	start := time.Now()
	unstuck := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	parallel(b, benchInstances, func(i int) error {
		inst := newInstance(g, ns, appName(i), nil)
		if err := c.Patch(ctx, inst, unstuck); err != nil {
			return err
		}
		return c.Delete(ctx, inst)
	})
	waitUntil(b, func() bool { return !labelledChildren(b, c, g, ns) })
	return time.Since(start), n.Load(), cpu().sub(cpu0).self
}

// createActive creates 500 instances in ns and waits until all are ACTIVE.
func createActive(b *testing.B, ctx context.Context, c client.Client, rt *spoke.Runtime, g *graph.Graph, ns string) {
	parallel(b, benchInstances, func(i int) error {
		return c.Create(ctx, newInstance(g, ns, appName(i), map[string]any{"name": appName(i)}))
	})
	waitUntil(b, func() bool { return rt.Counts(g.Name)[""].Ready == benchInstances })
}

// labelledChildren reports whether ns still has an object of one of the
// graph's kinds labelled as its child.
func labelledChildren(b *testing.B, c client.Client, g *graph.Graph, ns string) bool {
	for _, k := range contract.GraphKinds(g) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind + "List"})
		require.NoError(b, c.List(context.Background(), list, client.InNamespace(ns),
			client.MatchingLabels{contract.LabelGraph: g.Name}, client.Limit(1)))
		if len(list.Items) > 0 {
			return true
		}
	}
	return false
}

// waitUntil polls cond every 10 ms for up to five minutes.
func waitUntil(b *testing.B, cond func() bool) {
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		require.True(b, time.Now().Before(deadline), "condition still false after five minutes")
		time.Sleep(10 * time.Millisecond)
	}
}

// serveForOrphans serves g in single-cluster mode with the benchmark's
// concurrency and the given orphan grace; stop ends it and waits.
func serveForOrphans(b *testing.B, cfg *rest.Config, g *graph.Graph, grace time.Duration) (context.Context, *spoke.Runtime, func()) {
	cl, err := cluster.New(cfg, cacheopts.TrimCache)
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop := func() { cancel(); wg.Wait() }
	wg.Go(func() { _ = cl.Start(ctx) })
	if !cl.GetCache().WaitForCacheSync(ctx) {
		stop()
		b.Fatal("the cluster's cache did not sync")
	}
	rt := spoke.New(spoke.Config{Options: instance.Options{Workers: benchConcurrency, OrphanGrace: grace}})
	wg.Go(func() { _ = rt.Start(ctx) })
	require.NoError(b, rt.Serve(spoke.Version{Graph: g}))
	require.NoError(b, rt.Engage(ctx, "", cl))
	return ctx, rt, stop
}
