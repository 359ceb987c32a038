//go:build integration

package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The targets for one hub process.
const (
	targetRSS1Graph  = 512 << 20
	targetRSS5Graphs = 1 << 30
)

// BenchmarkFleet engages N simulated clusters that share one real API
// server, registers G graphs (one ConfigMap each) and creates one instance
// per graph per cluster. It reports the time until the fleet is served
// (s-served: every cluster attached to every graph, and every instance
// ACTIVE, which it becomes only once its cluster's informers have
// delivered it and synced the child kind, the runtime reading children
// from its cache), the time until every cluster was attached
// (s-attached: the hub's member engaged, before its informers sync), and
// the process's RSS, heap and goroutines after settling (after GC), whole
// and per cluster (the increment over the same hub with no cluster, both
// measured after the goroutine count settled). The clock starts as the
// clusters are engaged (namespace mode: as their namespaces are created); the instances are created from
// then on by a client retrying each until its kind is served, in hub and
// floor runs alike. The hub and the floor have no client-side rate limit
// (fgtesting.NoRateLimit).
//
// Clusters are built three ways (FLEET_MODES, default all):
//   - testing: the project's testing provider, one cluster object with its
//     own HTTP client and REST mapper per cluster, as separate clusters have;
//   - shared: the same, but every cluster shares one HTTP client and REST
//     mapper (fgtesting.SharedConnection), as an embedder can do for
//     clusters behind one endpoint;
//   - namespace: multicluster-runtime's namespace provider (each namespace a
//     cluster) through fgtesting.NamespaceProvider;
//   - floor: no hub, only what any controller serving these graphs on
//     these clusters must do (see runFloor): install the CRDs, run the
//     informers, and reconcile each instance with one apply and one status
//     write: the machine's and API server's floor for the time to serve
//     and the memory per cluster.
//
// FLEET_SIZES (default 100,300,1000) and FLEET_GRAPHS (default 1) choose
// the workload. Run it with `make bench-fleet`, which runs each mode and
// size in a process of its own (a stopped hub's memory is not all given
// back, so totals after a large run are not those of a fresh process); it
// is not part of make test.
func BenchmarkFleet(b *testing.B) {
	modes := envList("FLEET_MODES", "testing,shared,namespace")
	sizes := envList("FLEET_SIZES", "100,300,1000")
	graphs, err := strconv.Atoi(envOr("FLEET_GRAPHS", "1"))
	require.NoError(b, err)
	for _, mode := range modes {
		for _, s := range sizes {
			n, err := strconv.Atoi(s)
			require.NoError(b, err)
			b.Run(fmt.Sprintf("%s/clusters=%d/graphs=%d", mode, n, graphs), func(b *testing.B) {
				for range b.N { // one engagement per iteration; run with -benchtime 1x
					runFleet(b, mode, n, graphs)
				}
			})
		}
	}
}

// usage is the process's footprint after a full GC.
type usage struct {
	rss, heap  uint64
	goroutines int
}

func measure(b *testing.B) usage {
	f, err := fgtesting.MeasureFootprint()
	require.NoError(b, err)
	return usage{rss: f.RSS, heap: f.HeapInuse, goroutines: f.Goroutines}
}

// startFleetNamespaces starts a hub API server with a namespace per
// simulated cluster, and returns a client of it (no rate limit: it stands
// for the users creating instances) and the namespaces.
func startFleetNamespaces(b testing.TB, n int) (*fgtesting.Fleet, client.Client, []string) {
	fleet, c, names := startFleetServer(b, n)
	createFleetNamespaces(c, names)
	return fleet, c, names
}

// startFleetServer is startFleetNamespaces without creating the
// namespaces: where a namespace is a cluster (namespace mode), creating it
// is the cluster's arrival.
func startFleetServer(b testing.TB, n int) (*fgtesting.Fleet, client.Client, []string) {
	fleet := fgtesting.StartFleet(b, 0, fgtesting.FleetOptions{Cluster: fgtesting.ClusterOptions{
		APIServerFlags: map[string]string{"max-requests-inflight": "3000", "max-mutating-requests-inflight": "1500"},
	}})
	c, err := client.New(fgtesting.NoRateLimit(fleet.Hub.Config), client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(b, err)
	return fleet, c, simNames(n)
}

// simNames are the names of n simulated clusters (and of their namespaces).
func simNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%04d", simPrefix, i)
	}
	return names
}

// createFleetNamespaces creates the namespaces called names.
func createFleetNamespaces(c client.Client, names []string) {
	parallel(names, func(ns string) error {
		return c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
}

func runFleet(b *testing.B, mode string, n, graphs int) {
	if mode == "floor" {
		runFloor(b, n, graphs)
		return
	}
	fleet, c, names := startFleetServer(b, n)
	ctx := context.Background()

	before := runtime.NumGoroutine()
	cfg := fgtesting.NoRateLimit(fleet.Hub.Config)
	provider, engage := simulatedProvider(b, mode, cfg, c, names)
	h, stop := startStoppableHub(b, cfg, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	kinds := make([]schema.GroupVersionKind, graphs)
	for i := range kinds {
		kinds[i] = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: fmt.Sprintf("FleetBench%d", i)}
		require.NoError(b, h.RegisterGraph(ctx, oneConfigMapRGD(b, kinds[i].Kind)))
	}
	base := settle(b)
	writeProfiles(b, fmt.Sprintf("%s-%d-%d-empty", mode, n, graphs))

	stopCPU := profileCPU(b, fmt.Sprintf("%s-%d-%d-serving", mode, n, graphs))
	start := time.Now()
	engage()
	go createFleetInstances(ctx, c, kinds, names)
	profile := func() {
		writeProfiles(b, fmt.Sprintf("%s-%d-%d-timeout", mode, n, graphs))
		writeServerProfiles(b, fleet.Hub.Config, fmt.Sprintf("%s-%d-%d-timeout", mode, n, graphs))
		logNotActive(ctx, b, c, kinds, 3)
	}
	attached := waitFor(b, "every cluster attached", 20*time.Millisecond, profile, func() (bool, string) {
		got := countServed(h, kinds)
		return got == n*graphs, fmt.Sprintf("%d of %d (cluster, graph) pairs attached", got, n*graphs)
	})
	b.Logf("%s: %d clusters attached after %s", mode, n, attached.Sub(start))
	served := waitFor(b, "every instance ACTIVE", 500*time.Millisecond, profile, func() (bool, string) {
		got := countActiveAll(ctx, c, kinds)
		return got == n*graphs, fmt.Sprintf("%d of %d instances ACTIVE", got, n*graphs)
	})
	stopCPU()
	after := settle(b)
	writeProfiles(b, fmt.Sprintf("%s-%d-%d", mode, n, graphs))

	report(b, mode, n, graphs, attached.Sub(start), served.Sub(start), base, after)
	stop()
	stopped = true
	left := goroutinesLeft(before, closeIdle(b, cfg))
	b.ReportMetric(float64(left), "goroutines-left")
	fmt.Printf("fleet %-9s clusters=%-5d graphs=%d  goroutines left after the hub stopped: %d (target 0)\n", mode, n, graphs, left)
	if left > 0 {
		writeProfiles(b, fmt.Sprintf("%s-%d-%d-stopped", mode, n, graphs))
	}
}

// goroutinesLeft waits, up to a minute, until the process has no more
// goroutines than before the hub started, and returns how many more it
// has then (0 when it got there): what a stopped hub leaks. It calls
// closeIdle at each sample: the HTTP connections the clusters shared stay
// in net/http's pool, a goroutine each, until closed or idle for 90 s
// (see TestAStoppedHubLeavesNoGoroutine).
func goroutinesLeft(before int, closeIdle func()) int {
	closeIdle()
	left := runtime.NumGoroutine() - before
	for deadline := time.Now().Add(time.Minute); left > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // sampling interval
		closeIdle()
		left = runtime.NumGoroutine() - before
	}
	return max(left, 0)
}

// simPrefix starts the name of every namespace that is a simulated
// cluster, for the namespace provider.
const simPrefix = "sim-"

// closeIdle closes the idle connections of client-go's transport for the
// fleet's server: every cluster object, shared connection and client of
// this process that reaches it with the same credentials uses that one
// cached transport.
func closeIdle(b *testing.B, cfg *rest.Config) func() {
	rt, err := rest.TransportFor(cfg)
	require.NoError(b, err)
	return func() { utilnet.CloseIdleConnectionsFor(rt) }
}

// simulatedProvider returns the provider for mode and the function that
// makes it engage the clusters (called once the hub runs).
func simulatedProvider(b *testing.B, mode string, cfg *rest.Config, c client.Client, names []string) (multicluster.Provider, func()) {
	ctx := context.Background()
	switch mode {
	case "testing", "shared":
		createFleetNamespaces(c, names)
		p := fgtesting.NewProvider()
		var shared *fgtesting.SharedConnection
		if mode == "shared" {
			var err error
			shared, err = fgtesting.NewSharedConnection(cfg)
			require.NoError(b, err)
		}
		return p, func() { require.NoError(b, p.AddSimulated(ctx, cfg, names, shared)) }
	case "namespace":
		// The provider engages a namespace as soon as it sees it: the
		// clusters arrive when their namespaces are created, after the
		// empty hub was measured. (Created before, the measure raced the
		// provider's first engagements: the increment per cluster then
		// depended on how many were already engaged.)
		p, err := fgtesting.NewNamespaceProvider(cfg, fgtesting.NamespaceProviderOptions{Prefix: simPrefix})
		require.NoError(b, err)
		return p, func() { createFleetNamespaces(c, names) }
	}
	b.Fatalf("unknown FLEET_MODES entry %q (testing, shared, namespace)", mode)
	return nil, nil
}

// parallel runs f for every name on 16 workers and panics on no error:
// failures are retried until they pass (namespaces and instances are
// created while the server is busy).
func parallel(names []string, f func(name string) error) {
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for name := range work {
				for err := f(name); client.IgnoreAlreadyExists(err) != nil; err = f(name) {
					time.Sleep(50 * time.Millisecond) // retry pacing; the kind may not be served yet
				}
			}
		})
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
}

// createFleetInstances creates one instance of every kind in every cluster's
// namespace, retrying each until its kind is served. Each kind's instance
// has a name of its own: every graph names its ConfigMap after the
// instance, and instances of two graphs with one name would claim one
// ConfigMap, which the runtime refuses as a conflict.
func createFleetInstances(ctx context.Context, c client.Client, kinds []schema.GroupVersionKind, names []string) {
	for _, gvk := range kinds {
		parallel(names, func(ns string) error {
			u := instance(gvk, strings.ToLower(gvk.Kind), map[string]any{"size": int64(1)})
			u.SetNamespace(ns)
			return c.Create(ctx, u)
		})
	}
}

// countServed counts the (cluster, graph) pairs whose cluster serves the
// graph.
func countServed(h *sdk.Hub, kinds []schema.GroupVersionKind) int {
	served := 0
	for _, gvk := range kinds {
		for _, cs := range h.FleetStatus(strings.ToLower(gvk.Kind)).Clusters {
			if cs.Serving && cs.CRD.Healthy() {
				served++
			}
		}
	}
	return served
}

func countActiveAll(ctx context.Context, c client.Client, kinds []schema.GroupVersionKind) int {
	active := 0
	for _, gvk := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			return -1
		}
		for _, u := range list.Items {
			if s, _, _ := unstructured.NestedString(u.Object, "status", "state"); s == "ACTIVE" {
				active++
			}
		}
	}
	return active
}

// waitFor polls cond every interval until it holds and returns when it
// first did. The interval is the measurement's granularity: a cond that
// lists every instance of the fleet would, polled often, take the CPU the
// hub needs. cond also says how far it got, which is logged every 30 s
// and on timeout, when onTimeout runs too (to write profiles).
func waitFor(b *testing.B, what string, interval time.Duration, onTimeout func(), cond func() (bool, string)) time.Time {
	start := time.Now()
	deadline, nextLog := start.Add(envDuration(b, "FLEET_TIMEOUT", 10*time.Minute)), start.Add(30*time.Second)
	for {
		done, progress := cond()
		if done {
			return time.Now()
		}
		if now := time.Now(); now.After(deadline) {
			onTimeout()
			b.Fatalf("timed out waiting for %s: %s after %s", what, progress, now.Sub(start).Round(time.Second))
		} else if now.After(nextLog) {
			fmt.Printf("fleet     waiting for %s: %s after %s\n", what, progress, now.Sub(start).Round(time.Second))
			nextLog = now.Add(30 * time.Second)
		}
		time.Sleep(interval) // measurement granularity, not synchronisation
	}
}

func envDuration(b *testing.B, key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	require.NoError(b, err, "%s", key)
	return d
}

// settle waits until the goroutine count stops changing and measures then.
func settle(b *testing.B) usage {
	settleGoroutines()
	return measure(b)
}

// settleGoroutines waits until the goroutine count stops changing: three
// equal samples a second apart, at most a minute.
func settleGoroutines() {
	last, same := -1, 0
	for deadline := time.Now().Add(time.Minute); same < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Second) // sampling interval
		if g := runtime.NumGoroutine(); g == last {
			same++
		} else {
			last, same = g, 0
		}
	}
}

// report prints and reports one run: attached is when every cluster was
// attached to every graph (the floor: every informer synced), served when
// every instance was ACTIVE too.
func report(b *testing.B, mode string, n, graphs int, attached, served time.Duration, base, after usage) {
	mib := func(v uint64) float64 { return float64(v) / (1 << 20) }
	perKiB := func(a, z uint64) float64 { return (float64(z) - float64(a)) / 1024 / float64(n) }
	b.ReportMetric(served.Seconds(), "s-served")
	b.ReportMetric(attached.Seconds(), "s-attached")
	b.ReportMetric(mib(after.rss), "MiB-rss")
	b.ReportMetric(mib(after.heap), "MiB-heap")
	b.ReportMetric(float64(after.goroutines), "goroutines")
	b.ReportMetric(perKiB(base.rss, after.rss), "KiB-rss/cluster")
	b.ReportMetric(perKiB(base.heap, after.heap), "KiB-heap/cluster")
	b.ReportMetric(float64(after.goroutines-base.goroutines)/float64(n), "goroutines/cluster")
	rssTarget := uint64(targetRSS1Graph)
	if graphs > 1 {
		rssTarget = targetRSS5Graphs
	}
	verdictCol := verdict(after.rss <= rssTarget || n < 1000)
	if mode == "floor" { // a floor is not held to a target
		verdictCol = "the floor"
	}
	fmt.Printf("fleet %-9s clusters=%-5d graphs=%d  served %6.1fs (attached/synced %6.1fs)  "+
		"rss %6.0f MiB (target <= %.0f MiB, %s)  heap %6.0f MiB  goroutines %6d  "+
		"per cluster: %5.0f KiB rss, %5.0f KiB heap, %.1f goroutines\n",
		mode, n, graphs, served.Seconds(), attached.Seconds(),
		mib(after.rss), mib(rssTarget), verdictCol, mib(after.heap), after.goroutines,
		perKiB(base.rss, after.rss), perKiB(base.heap, after.heap), float64(after.goroutines-base.goroutines)/float64(n))
}

// writeProfiles writes the goroutine and heap profiles to $FLEET_PROFILES
// (a directory), when set, to see where the per-cluster cost goes.
func writeProfiles(b *testing.B, name string) {
	dir := os.Getenv("FLEET_PROFILES")
	if dir == "" {
		return
	}
	for _, p := range []struct{ kind, file string }{{"goroutine", "goroutines.txt"}, {"heap", "heap.pprof"}} {
		f, err := os.Create(filepath.Join(dir, name+"-"+p.file))
		require.NoError(b, err)
		debug := 0
		if p.kind == "goroutine" {
			debug = 1
		}
		require.NoError(b, pprof.Lookup(p.kind).WriteTo(f, debug))
		require.NoError(b, f.Close())
	}
}

// logNotActive logs the status of up to max instances of each kind that
// are not ACTIVE, and how many of each kind exist: what a stalled fleet
// says about itself.
func logNotActive(ctx context.Context, b *testing.B, c client.Client, kinds []schema.GroupVersionKind, max int) {
	for _, gvk := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			b.Logf("listing %s: %v", gvk.Kind, err)
			continue
		}
		shown := 0
		for _, u := range list.Items {
			if s, _, _ := unstructured.NestedString(u.Object, "status", "state"); s != "ACTIVE" && shown < max {
				shown++
				status, _ := json.Marshal(u.Object["status"])
				b.Logf("%s %s/%s not ACTIVE: finalizers %v, status %s", gvk.Kind, u.GetNamespace(), u.GetName(), u.GetFinalizers(), status)
			}
		}
		b.Logf("%s: %d instances exist", gvk.Kind, len(list.Items))
	}
}

// profileCPU profiles the CPU into $FLEET_PROFILES, when set, until the
// returned stop is called: where the time to serve every cluster goes.
func profileCPU(b *testing.B, name string) (stop func()) {
	dir := os.Getenv("FLEET_PROFILES")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+"-cpu.pprof"))
	require.NoError(b, err)
	require.NoError(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(b, f.Close())
	}
}

// writeServerProfiles writes the API server's goroutines and metrics to
// $FLEET_PROFILES, when set, to see what a stalled fleet waits for on the
// server's side.
func writeServerProfiles(b *testing.B, cfg *rest.Config, name string) {
	dir := os.Getenv("FLEET_PROFILES")
	if dir == "" {
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(b, err)
	for path, file := range map[string]string{"/debug/pprof/goroutine": "server-goroutines.txt", "/metrics": "server-metrics.txt"} {
		req := cs.CoreV1().RESTClient().Get().AbsPath(path)
		if file == "server-goroutines.txt" {
			req = req.Param("debug", "1")
		}
		raw, err := req.DoRaw(context.Background())
		if err != nil {
			b.Logf("reading the API server's %s: %v", path, err)
			continue
		}
		require.NoError(b, os.WriteFile(filepath.Join(dir, name+"-"+file), raw, 0o600))
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// oneConfigMapRGD is a graph of one ConfigMap whose instance kind is kind;
// the graph is named after the kind in lower case.
func oneConfigMapRGD(t testing.TB, kind string) *v1alpha1.ResourceGraphDefinition {
	return configMapRGD(t, strings.ToLower(kind), kind, 0)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envList(key, def string) []string {
	return strings.Split(envOr(key, def), ",")
}
