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
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
//
// The deletion's floor (floor-delete-s, ratio delete-x-floor) is the same
// writes made directly, after the runtime has stopped: see deletionFloor.
// The runtime and the floor both reach the API server with no client-side
// rate limit (fgtesting.NoRateLimit); each phase's kube-apiserver and etcd
// CPU is printed.
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
	cfg := fgtesting.NoRateLimit(srv.Config)
	c := newClient(b, cfg)
	installCRD(b, c, g)
	createNamespace(b, c, "scale")
	installAdmissionPolicy(b, c, g, map[string]any{"name": "probe"})
	floorKind := installFloorCRD(b, c, g)

	// The spoke's cache is trimmed as the runtime recommends (TrimCache).
	var requests atomic.Int64
	ctx, rt, stop := serveSingleCluster(b, counted(cfg, &requests), g, cacheopts.TrimCache)
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
	cpu0, requests0, load0 := serverCPU(b, srv), requests.Load(), serverLoad(b, srv)
	start = time.Now()
	parallel(b, n, func(i int) error {
		return client.IgnoreNotFound(c.Delete(ctx, newInstance(g, "scale", appName(i), nil)))
	})
	waitCounts(b, rt, g, func(cnt spoke.Count) bool { return cnt.Total == 0 })
	deleted := time.Since(start)
	cpuDelete, loadDelete := serverCPU(b, srv).Sub(cpu0), serverLoad(b, srv).Sub(load0)
	deleteRequests := float64(requests.Load()-requests0) / float64(n)
	stopProfiles()
	b.ReportMetric(deleted.Seconds(), "delete-s")
	b.StopTimer()
	fmt.Printf("reconciles/instance, creating and deleting: %s\n", reconciles(n))
	stop() // the floor runs on a settled server, the runtime gone
	floor, cpuFloor, loadFloor := deletionFloor(b, srv, c, floorKind, g, n)
	b.ReportMetric(floor.Seconds(), "floor-delete-s")
	b.ReportMetric(deleted.Seconds()/floor.Seconds(), "delete-x-floor")
	fmt.Printf("%d instances: ACTIVE in %s; heap %.1f KiB/instance (%.0f MiB over %.0f MiB before), RSS %.0f MiB after GC; all deleted in %s (floor %s, %.2fx)\n",
		n, active.Round(time.Millisecond), perInstance, float64(heap-heap0)/(1<<20), float64(heap0)/(1<<20),
		float64(rss)/(1<<20), deleted.Round(time.Millisecond), floor.Round(time.Millisecond), deleted.Seconds()/floor.Seconds())
	fmt.Printf("server CPU deleting: runtime %s; floor %s\n", cpuDelete, cpuFloor)
	fmt.Printf("the API server's account, deleting: runtime %s\nfloor %s\n", loadDelete, loadFloor)
	fmt.Printf("requests/instance deleting: the runtime's %.2f and the user's delete (floor 5.00)\n", deleteRequests)
	b.ReportMetric(deleteRequests+1, "delete-requests/instance")
}

// serverCPU reads the CPU srv's kube-apiserver and etcd have used.
func serverCPU(b *testing.B, srv *fgtesting.Cluster) fgtesting.ProcessCPU {
	cpu, err := srv.CPU()
	require.NoError(b, err)
	return cpu
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

// deletionFloor makes directly the writes of deleting n WebApps in
// reverse DAG order, at the benchmark's concurrency, through c (one
// client, made once, with no client-side rate limit), and returns the time
// until all of them are gone, what that cost the API server and etcd, and
// the API server's account of it. Per instance: the user's delete of the
// instance (its finalizer holds it), the deletes of its Service,
// Deployment and ConfigMap in that order, and the removal of the
// finalizer: the runtime's writes. The objects are those the graph
// renders, of the same kinds, created before the clock; the instance is of
// floorKind, a copy of the graph's CRD that nothing serves and no
// admission policy stamps. Each DELETE answers once its object is gone
// (none has a finalizer), so the order holds without waiting for anything
// else. What the floor does not do: read, or learn of each delete from a
// watch before the next wave, as the runtime does.
func deletionFloor(b *testing.B, srv *fgtesting.Cluster, c client.Client, floorKind schema.GroupVersionKind, g *graph.Graph, n int) (time.Duration, fgtesting.ProcessCPU, fgtesting.ServerLoad) {
	ctx := context.Background()
	createNamespace(b, c, "floor")
	objects := func(i int) []*unstructured.Unstructured {
		objs := floorObjects(g, "floor", appName(i))
		objs[0].SetGroupVersionKind(floorKind)
		objs[0].SetFinalizers([]string{"bench.fleetgraph.dev/floor"})
		return objs
	}
	parallel(b, n, func(i int) error {
		for _, obj := range objects(i) {
			if err := c.Create(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	})
	cpu0, load0 := serverCPU(b, srv), serverLoad(b, srv)
	start := time.Now()
	release := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	parallel(b, n, func(i int) error {
		objs := objects(i)
		inst, children := objs[0], objs[1:]
		if err := c.Delete(ctx, inst); err != nil {
			return err
		}
		for k := len(children) - 1; k >= 0; k-- {
			if err := c.Delete(ctx, children[k], client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
				return err
			}
		}
		return c.Patch(ctx, inst, release)
	})
	took, cpu, load := time.Since(start), serverCPU(b, srv).Sub(cpu0), serverLoad(b, srv).Sub(load0)
	for _, kind := range []schema.GroupVersionKind{floorKind, {Version: "v1", Kind: "ConfigMap"}, {Group: "apps", Version: "v1", Kind: "Deployment"}, {Version: "v1", Kind: "Service"}} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
		require.NoError(b, c.List(ctx, list, client.InNamespace("floor")))
		require.Empty(b, list.Items, "every %s of the floor is gone", kind.Kind)
	}
	return took, cpu, load
}

// installFloorCRD installs a copy of g's CRD under another kind
// (Floor<Kind>), for floors that write instances nothing serves, and
// returns its kind once it is established.
func installFloorCRD(b *testing.B, c client.Client, g *graph.Graph) schema.GroupVersionKind {
	crd := g.CRD.DeepCopy()
	kind := "Floor" + crd.Spec.Names.Kind
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{
		Kind: kind, ListKind: kind + "List", Plural: strings.ToLower(kind) + "s", Singular: strings.ToLower(kind),
	}
	crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
	crd.Labels = nil
	installCRD(b, c, &graph.Graph{CRD: crd})
	return schema.GroupVersionKind{Group: crd.Spec.Group, Version: g.Instance.GVK.Version, Kind: kind}
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
