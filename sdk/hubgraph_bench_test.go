//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/crds"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	hubBenchInstances   = 200
	hubBenchConcurrency = 8
)

var pairGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Pair"}

// pairRGD is the smallest hub graph spanning two spokes: one ConfigMap on
// each, named after the instance.
const pairRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: pair
spec:
  schema:
    apiVersion: v1alpha1
    kind: Pair
    spec:
      value: string | default="v"
  resources:
  - id: left
    target: {cluster: {name: spoke-1}}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-left
      data:
        value: ${schema.spec.value}
  - id: right
    target: {cluster: {name: spoke-2}}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-right
      data:
        value: ${schema.spec.value}
`

// BenchmarkHubGraph200 measures hub graphs across clusters: 200 Pair
// instances created on the hub with concurrency 8, each writing one
// ConfigMap on each of two spokes, until all are ACTIVE. It has two
// floors, each measured before and after the run in each round (the mean
// of the two), at the same concurrency on the same three API servers:
//
//   - the applies floor: the same 400 ConfigMaps applied directly with
//     server-side apply (ratio, against the target of 1.5x);
//   - the full floor: what any hub graph must do for this workload, made
//     directly: the 200 creates of instances on the hub (of a CRD of the
//     same schema that nothing serves), then the 400 applies, then the 200
//     status writes (ratio-full). Its creates alone are reported too
//     (creates-s): the run pays for them, the applies floor does not, so
//     the 1.5x target is out of reach when 1.5 times the applies floor is
//     less than they take; the output says so.
//
// Each round uses fresh namespaces on the same fleet. It also reports the
// requests per instance the hub made, counted on every cluster it talks
// to (the hub's own API server and both spokes), against the applies
// floor's 2 and the full floor's 4 (the benchmark's creates excluded).
//
// The floors' clients are made once, and warmed, before the first round;
// they, the hub and the user's client have no client-side rate limit
// (fgtesting.NoRateLimit). Every phase (floor, full floor, run) starts
// once the hub has settled (waitQuiet). The
// floors read and watch nothing; the full floor's status writes follow
// its applies phase by phase, where the hub overlaps instances. Each
// phase's API-server CPU (hub and spokes) is printed.
func BenchmarkHubGraph200(b *testing.B) {
	fleet := fgtesting.StartFleet(b, 2)
	ctx := context.Background()
	var reqs requestCount
	kinds := &requestKinds{n: map[string]int{}}
	provider := fgtesting.NewProvider()
	spokes := map[string]client.Client{}
	for _, s := range fleet.Spokes() {
		require.NoError(b, provider.AddConfig(ctx, s.Name, fgtesting.NoRateLimit(countedByKind(s.Config, &reqs, s.Name, kinds))))
		spokes[s.Name] = benchClient(b, fgtesting.NoRateLimit(s.Config))
	}
	hub, err := client.NewWithWatch(fgtesting.NoRateLimit(fleet.Hub.Config), client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(b, err)
	h := startHub(b, fgtesting.NoRateLimit(countedByKind(fleet.Hub.Config, &reqs, "hub", kinds)), provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(b, h.RegisterGraph(ctx, rgdFromString(b, pairRGD)))
	warmUp(b, hub, spokes)
	requireStamping(b, hub, pairGVK, "default")
	floorGVK := installFloorPair(b, hub)
	fc := newPairFloorClients(b, fleet, floorGVK)
	servers := append([]*fgtesting.Cluster{fleet.Hub}, fleet.Spokes()...)
	phase := func(what string, f func()) {
		waitQuiet(b, &reqs)
		cpu0 := fleetCPU(b, servers)
		f()
		fmt.Printf("    API servers' CPU, %s: %s\n", what, fleetCPU(b, servers).Sub(cpu0))
	}

	var ratios, fullRatios []float64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ns := fmt.Sprintf("round-%d", i)
		for _, c := range append([]client.Client{hub}, spokes["spoke-1"], spokes["spoke-2"]) {
			for _, n := range []string{ns, ns + "-floor-a", ns + "-floor-b", ns + "-full-a", ns + "-full-b"} {
				require.NoError(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))
			}
		}
		kinds.reset()
		b.StartTimer()
		var floorA, floorB, wall, created time.Duration
		var floorReqs, used int64
		var fullA, fullB fullFloor
		var byKind []string
		phase("applies floor", func() { floorA, floorReqs = applyPairFloor(b, fc, ns+"-floor-a") })
		phase("full floor", func() { fullA = fullPairFloor(b, fc, ns+"-full-a") })
		phase("hub graphs", func() {
			kinds.reset()
			start, before := time.Now(), reqs.Load()
			created = runPairs(b, hub, ns)
			wall, used = time.Since(start), reqs.Load()-before
			byKind = kinds.reset()
		})
		phase("full floor", func() { fullB = fullPairFloor(b, fc, ns+"-full-b") })
		phase("applies floor", func() { floorB, _ = applyPairFloor(b, fc, ns+"-floor-b") })
		floor := (floorA + floorB) / 2
		full := fullA.mean(fullB)
		ratio, fullRatio := wall.Seconds()/floor.Seconds(), wall.Seconds()/full.total.Seconds()
		ratios, fullRatios = append(ratios, ratio), append(fullRatios, fullRatio)
		fmt.Printf("round %d: hub-graph/floor ratio: %.2fx (200 instances ACTIVE in %s, their creates took %s; floor %s: mean of %s before and %s after)\n",
			i+1, ratio, wall.Round(time.Millisecond), created.Round(time.Millisecond), floor.Round(time.Millisecond), floorA.Round(time.Millisecond), floorB.Round(time.Millisecond))
		fmt.Printf("round %d: hub-graph/full-floor ratio: %.2fx (full floor %s: %s creates + %s applies + %s status writes, mean of before and after)\n",
			i+1, fullRatio, full.total.Round(time.Millisecond), full.creates.Round(time.Millisecond), full.applies.Round(time.Millisecond), full.statuses.Round(time.Millisecond))
		if limit := time.Duration(1.5 * float64(floor)); full.creates > limit {
			fmt.Printf("round %d: the creates alone (%s) take longer than 1.5x the applies floor (%s): the 1.5x target is out of reach on this machine\n",
				i+1, full.creates.Round(time.Millisecond), limit.Round(time.Millisecond))
		}
		fmt.Printf("requests/instance: %.2f by the hub on all three clusters (floor %.2f; full floor %.2f with the creates)\n",
			float64(used)/hubBenchInstances, float64(floorReqs)/hubBenchInstances, float64(full.requests)/hubBenchInstances)
		for _, line := range byKind {
			fmt.Printf("    %s\n", line)
		}
		b.ReportMetric(wall.Seconds(), "active-s")
		b.ReportMetric(floor.Seconds(), "floor-s")
		b.ReportMetric(full.total.Seconds(), "full-floor-s")
		b.ReportMetric(full.creates.Seconds(), "creates-s")
		b.ReportMetric(float64(used)/hubBenchInstances, "requests/instance")
	}
	slices.Sort(ratios)
	slices.Sort(fullRatios)
	median, fullMedian := ratios[len(ratios)/2], fullRatios[len(fullRatios)/2]
	b.ReportMetric(median, "ratio")
	b.ReportMetric(fullMedian, "ratio-full")
	fmt.Printf("hub-graph/floor ratio: %.2fx (median of %d rounds; target <= 1.5x)\n", median, len(ratios))
	fmt.Printf("hub-graph/full-floor ratio: %.2fx (median of %d rounds)\n", fullMedian, len(fullRatios))
}

// installFloorPair installs on the hub the CRD of FloorPair, the Pair
// graph's schema under a kind nothing serves, for the full floor's
// creates and status writes, and waits until it is established. It then
// creates, writes the status of and deletes one FloorPair, as warmUp does
// for the Pairs, so that the first round's floor does not pay for the API
// server's first requests of the kind (about a second here).
func installFloorPair(b *testing.B, hub client.Client) schema.GroupVersionKind {
	ctx := context.Background()
	rgd, gvk := renamedRGD(rgdFromString(b, pairRGD), "floor-pair", "FloorPair")
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(b, err)
	u, err := crds.ApplyObject(g.CRD)
	require.NoError(b, err)
	require.NoError(b, client.IgnoreAlreadyExists(hub.Create(ctx, u)))
	_, err = crds.WaitEstablished(ctx, hub, g.CRD.Name, crds.PollInterval, crds.EstablishTimeout, crds.RequestTimeout)
	require.NoError(b, err)
	warm := instance(gvk, "warm-floor", map[string]any{"value": "v"})
	require.Eventually(b, func() bool { return client.IgnoreAlreadyExists(hub.Create(ctx, warm.DeepCopy())) == nil }, wait, tick)
	require.NoError(b, hub.Status().Patch(ctx, warm, client.RawPatch(types.MergePatchType, floorStatus)))
	require.NoError(b, hub.Delete(ctx, warm))
	return gvk
}

// fullFloor is one measure of the full floor, by phase.
type fullFloor struct {
	creates, applies, statuses, total time.Duration
	requests                          int64
}

func (f fullFloor) mean(o fullFloor) fullFloor {
	return fullFloor{
		creates: (f.creates + o.creates) / 2, applies: (f.applies + o.applies) / 2,
		statuses: (f.statuses + o.statuses) / 2, total: (f.total + o.total) / 2,
		requests: (f.requests + o.requests) / 2,
	}
}

// pairFloorClients are the floors' clients, one per cluster, made once and
// warmed, with no rate limit; requests counts what they make.
type pairFloorClients struct {
	hub      client.Client
	spokes   map[string]client.Client
	floorGVK schema.GroupVersionKind
	requests *requestCount
}

func newPairFloorClients(b *testing.B, fleet *fgtesting.Fleet, floorGVK schema.GroupVersionKind) pairFloorClients {
	fc := pairFloorClients{spokes: map[string]client.Client{}, floorGVK: floorGVK, requests: &requestCount{}}
	fc.hub = benchClient(b, fgtesting.NoRateLimit(countedConfig(fleet.Hub.Config, fc.requests)))
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(floorGVK.GroupVersion().WithKind(floorGVK.Kind + "List"))
	require.NoError(b, fc.hub.List(context.Background(), list, client.Limit(1)))
	for _, s := range fleet.Spokes() {
		fc.spokes[s.Name] = benchClient(b, fgtesting.NoRateLimit(countedConfig(s.Config, fc.requests)))
		require.NoError(b, fc.spokes[s.Name].List(context.Background(), &corev1.ConfigMapList{}, client.Limit(1)))
	}
	return fc
}

// fullPairFloor makes directly, at the run's concurrency, what any hub
// graph must do for the run: the 200 creates of instances on the hub (of
// kind fc.floorGVK, which nothing serves), the 400 applies on the spokes,
// and the 200 status writes of the instances, with the conditions the hub
// writes. Each phase follows the one before, as an instance's writes do.
func fullPairFloor(b *testing.B, fc pairFloorClients, ns string) fullFloor {
	before := fc.requests.Load()
	var f fullFloor
	start := time.Now()
	parallelN(b, hubBenchInstances, func(i int) error {
		p := instance(fc.floorGVK, fmt.Sprintf("pair-%03d", i), map[string]any{"value": "v"})
		p.SetNamespace(ns)
		return fc.hub.Create(context.Background(), p)
	})
	f.creates = time.Since(start)
	mark := time.Now()
	applyPairFloor(b, fc, ns)
	f.applies = time.Since(mark)
	mark = time.Now()
	parallelN(b, hubBenchInstances, func(i int) error {
		p := instance(fc.floorGVK, fmt.Sprintf("pair-%03d", i), nil)
		p.SetNamespace(ns)
		return fc.hub.Status().Patch(context.Background(), p, client.RawPatch(types.MergePatchType, floorStatus))
	})
	f.statuses = time.Since(mark)
	f.total = time.Since(start)
	f.requests = fc.requests.Load() - before
	return f
}

// floorStatus is a status like the one the hub writes on an ACTIVE Pair.
var floorStatus = func() []byte {
	now := time.Now().UTC().Format(time.RFC3339)
	var conds []string
	for _, c := range []string{"InstanceManaged", "GraphResolved", "TargetsAllowed", "ResourcesReady", "Ready"} {
		conds = append(conds, fmt.Sprintf(`{"type":%q,"status":"True","reason":"Ready","message":"","lastTransitionTime":%q,"observedGeneration":1}`, c, now))
	}
	return []byte(`{"status":{"state":"ACTIVE","conditions":[` + strings.Join(conds, ",") + `]}}`)
}()

// warmUp makes one Pair ACTIVE and deletes it, so the first round does not
// pay for the hub's first watches of the child kind in each spoke.
func warmUp(b *testing.B, hub client.Client, spokes map[string]client.Client) {
	ctx := context.Background()
	p := instance(pairGVK, "warm", map[string]any{})
	require.Eventually(b, func() bool { return client.IgnoreAlreadyExists(hub.Create(ctx, p.DeepCopy())) == nil }, wait, tick)
	require.Eventually(b, func() bool { return state(hub, pairGVK, "warm") == "ACTIVE" }, wait, tick)
	require.NoError(b, hub.Delete(ctx, p))
	require.Eventually(b, func() bool {
		list := &corev1.ConfigMapList{}
		return spokes["spoke-2"].List(ctx, list, client.InNamespace("default"), client.MatchingLabels{"fleetgraph.dev/graph": "pair"}) == nil && len(list.Items) == 0
	}, wait, tick)
}

// runPairs creates the instances in ns and waits until all are ACTIVE. It
// learns their states from a watch, not by listing them again and again:
// a list of 200 instances every few milliseconds would load the hub's API
// server, during the run only (the floor has nothing of the kind). A watch
// that ends (an API server under load may drop it) is made again from a
// list. It returns how long the creates took.
func runPairs(b *testing.B, hub client.WithWatch, ns string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w := watchPairs(b, ctx, hub, ns, "")
	defer func() { w.Stop() }()
	start := time.Now()
	createdAt := make([]time.Time, hubBenchInstances)
	parallelN(b, hubBenchInstances, func(i int) error {
		p := instance(pairGVK, fmt.Sprintf("pair-%03d", i), map[string]any{"value": "v"})
		p.SetNamespace(ns)
		err := hub.Create(ctx, p)
		createdAt[i] = time.Now()
		return err
	})
	created := time.Since(start)
	states := map[string]string{}
	activeAt := map[string]time.Time{}
	active := 0
	defer func() { printLatencies(createdAt, activeAt) }()
	seen := func(u *unstructured.Unstructured) {
		s, _, _ := unstructured.NestedString(u.Object, "status", "state")
		if states[u.GetName()] == "ACTIVE" {
			active--
		}
		if s == "ACTIVE" {
			active++
			if _, ok := activeAt[u.GetName()]; !ok {
				activeAt[u.GetName()] = time.Now()
			}
		}
		states[u.GetName()] = s
	}
	for active < hubBenchInstances {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				fmt.Printf("the watch of the Pairs in %s ended with %d of %d ACTIVE; watching again from a list\n", ns, active, hubBenchInstances)
				list := &unstructured.UnstructuredList{}
				list.SetGroupVersionKind(pairGVK.GroupVersion().WithKind("PairList"))
				require.NoError(b, hub.List(ctx, list, client.InNamespace(ns)))
				for i := range list.Items {
					seen(&list.Items[i])
				}
				w = watchPairs(b, ctx, hub, ns, list.GetResourceVersion())
				continue
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			require.True(b, ok, "watch event %s: %v", ev.Type, ev.Object)
			seen(u)
		case <-ctx.Done():
			require.Fail(b, "timed out", "%d of %d Pairs ACTIVE in %s", active, hubBenchInstances, ns)
		}
	}
	return created
}

// watchPairs watches the Pairs in ns from resourceVersion ("" for now).
func watchPairs(b *testing.B, ctx context.Context, hub client.WithWatch, ns, resourceVersion string) watch.Interface {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(pairGVK.GroupVersion().WithKind("PairList"))
	opts := []client.ListOption{client.InNamespace(ns)}
	if resourceVersion != "" {
		opts = append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: resourceVersion}})
	}
	w, err := hub.Watch(ctx, list, opts...)
	require.NoError(b, err)
	return w
}

// printLatencies prints the distribution of the time from each Pair's
// create (its answer) to its first ACTIVE event: the hub's own latency per
// instance, queueing included.
func printLatencies(createdAt []time.Time, activeAt map[string]time.Time) {
	var lat []time.Duration
	for i, c := range createdAt {
		if a, ok := activeAt[fmt.Sprintf("pair-%03d", i)]; ok && !c.IsZero() {
			lat = append(lat, a.Sub(c))
		}
	}
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))].Round(time.Millisecond) }
	fmt.Printf("create->ACTIVE per instance: p10 %s, p50 %s, p90 %s, max %s\n", at(0.1), at(0.5), at(0.9), at(1))
}

// applyPairFloor applies the run's 400 ConfigMaps directly, 200 on each
// spoke, with server-side apply at the run's concurrency, and returns the
// time and the requests it took.
func applyPairFloor(b *testing.B, fc pairFloorClients, ns string) (time.Duration, int64) {
	clients, before := fc.spokes, fc.requests.Load()
	start := time.Now()
	parallelN(b, 2*hubBenchInstances, func(i int) error {
		cluster, suffix := "spoke-1", "left"
		if i%2 == 1 {
			cluster, suffix = "spoke-2", "right"
		}
		cm := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"value": "v"}}}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		cm.SetNamespace(ns)
		cm.SetName(fmt.Sprintf("pair-%03d-%s", i/2, suffix))
		return clients[cluster].Apply(context.Background(), client.ApplyConfigurationFromUnstructured(cm), client.FieldOwner("floor"), client.ForceOwnership)
	})
	return time.Since(start), fc.requests.Load() - before
}

// parallelN runs f(0..n-1) on hubBenchConcurrency goroutines.
func parallelN(b *testing.B, n int, f func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, hubBenchConcurrency)
	for range hubBenchConcurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
}

// requestCount counts the requests clients made, started and answered.
type requestCount struct{ started, answered atomic.Int64 }

// Load returns how many requests were started.
func (r *requestCount) Load() int64 { return r.started.Load() }

// countingRoundTripper counts the requests made through it and, when
// kinds is set, each kind of request (cluster, verb and resource).
type countingRoundTripper struct {
	next    http.RoundTripper
	n       *requestCount
	cluster string
	kinds   *requestKinds
}

func (c countingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.started.Add(1)
	defer c.n.answered.Add(1)
	c.kinds.add(c.cluster, r)
	return c.next.RoundTrip(r)
}

func countedConfig(cfg *rest.Config, n *requestCount) *rest.Config {
	return countedByKind(cfg, n, "", nil)
}

func countedByKind(cfg *rest.Config, n *requestCount, cluster string, kinds *requestKinds) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countingRoundTripper{next: rt, n: n, cluster: cluster, kinds: kinds}
	}
	return cfg
}

// requestKinds counts requests by cluster, verb and resource, to show
// where a run's requests per instance go.
type requestKinds struct {
	mu sync.Mutex
	n  map[string]int
}

func (k *requestKinds) add(cluster string, r *http.Request) {
	if k == nil {
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	resource := ""
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			resource = strings.Join(parts[i+2:], "/")
			if j := strings.Index(resource, "/"); j > 0 && !strings.HasSuffix(resource, "/status") {
				resource = resource[:j]
			} else if strings.HasSuffix(resource, "/status") {
				resource = strings.SplitN(resource, "/", 2)[0] + "/status"
			}
		}
	}
	if resource == "" && len(parts) > 0 {
		resource = parts[len(parts)-1]
	}
	verb := r.Method
	if r.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n[cluster+" "+verb+" "+resource]++
}

// reset returns the counts so far, sorted, and starts again.
func (k *requestKinds) reset() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for key, n := range k.n {
		out = append(out, fmt.Sprintf("%5d %s", n, key))
	}
	k.n = map[string]int{}
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

func benchClient(b *testing.B, cfg *rest.Config) client.Client {
	c, err := client.New(cfg, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(b, err)
	return c
}
