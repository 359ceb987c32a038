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
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
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
// ConfigMap on each of two spokes, until all are ACTIVE. The floor is the
// same 400 ConfigMaps applied directly with server-side apply at the same
// concurrency on the same two API servers, measured before and after the
// run in each round (the mean of the two is the floor). Each round uses
// fresh namespaces on the same fleet. It reports the median ratio and the
// requests per instance the hub made, counted on every cluster it talks
// to (the hub's own API server and both spokes), against the floor's 2.
func BenchmarkHubGraph200(b *testing.B) {
	fleet := fgtesting.StartFleet(b, 2)
	ctx := context.Background()
	var reqs atomic.Int64
	kinds := &requestKinds{n: map[string]int{}}
	provider := fgtesting.NewProvider()
	spokes := map[string]client.Client{}
	for _, s := range fleet.Spokes() {
		require.NoError(b, provider.AddConfig(ctx, s.Name, countedByKind(s.Config, &reqs, s.Name, kinds)))
		spokes[s.Name] = benchClient(b, s.Config)
	}
	hub, err := client.NewWithWatch(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(b, err)
	h := startHub(b, countedByKind(fleet.Hub.Config, &reqs, "hub", kinds), provider, sdk.Options{DisableRGDController: true})
	require.NoError(b, h.RegisterGraph(ctx, rgdFromString(b, pairRGD)))
	warmUp(b, hub, spokes)

	var ratios []float64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ns := fmt.Sprintf("round-%d", i)
		for _, c := range append([]client.Client{hub}, spokes["spoke-1"], spokes["spoke-2"]) {
			for _, n := range []string{ns, ns + "-floor-a", ns + "-floor-b"} {
				require.NoError(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))
			}
		}
		kinds.reset()
		b.StartTimer()
		floorA, floorReqs := applyPairFloor(b, fleet, ns+"-floor-a")
		start, before := time.Now(), reqs.Load()
		created := runPairs(b, hub, ns)
		wall, used := time.Since(start), reqs.Load()-before
		byKind := kinds.reset()
		floorB, _ := applyPairFloor(b, fleet, ns+"-floor-b")
		floor := (floorA + floorB) / 2
		ratio := wall.Seconds() / floor.Seconds()
		ratios = append(ratios, ratio)
		fmt.Printf("round %d: hub-graph/floor ratio: %.2fx (200 instances ACTIVE in %s, their creates took %s; floor %s: mean of %s before and %s after)\n",
			i+1, ratio, wall.Round(time.Millisecond), created.Round(time.Millisecond), floor.Round(time.Millisecond), floorA.Round(time.Millisecond), floorB.Round(time.Millisecond))
		fmt.Printf("requests/instance: %.2f by the hub on all three clusters (floor %.2f)\n",
			float64(used)/hubBenchInstances, float64(floorReqs)/hubBenchInstances)
		for _, line := range byKind {
			fmt.Printf("    %s\n", line)
		}
		b.ReportMetric(wall.Seconds(), "active-s")
		b.ReportMetric(floor.Seconds(), "floor-s")
		b.ReportMetric(float64(used)/hubBenchInstances, "requests/instance")
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	b.ReportMetric(median, "ratio")
	fmt.Printf("hub-graph/floor ratio: %.2fx (median of %d rounds; target <= 1.5x)\n", median, len(ratios))
}

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
// server, during the run only (the floor has nothing of the kind).
// It returns how long the creates took.
func runPairs(b *testing.B, hub client.WithWatch, ns string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(pairGVK.GroupVersion().WithKind("PairList"))
	w, err := hub.Watch(ctx, list, client.InNamespace(ns))
	require.NoError(b, err)
	defer w.Stop()
	start := time.Now()
	parallelN(b, hubBenchInstances, func(i int) error {
		p := instance(pairGVK, fmt.Sprintf("pair-%03d", i), map[string]any{"value": "v"})
		p.SetNamespace(ns)
		return hub.Create(ctx, p)
	})
	created := time.Since(start)
	states := map[string]string{}
	active := 0
	for active < hubBenchInstances {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(b, ok, "the watch of the Pairs in %s ended with %d of %d ACTIVE", ns, active, hubBenchInstances)
			u, ok := ev.Object.(*unstructured.Unstructured)
			require.True(b, ok, "watch event %s: %v", ev.Type, ev.Object)
			s, _, _ := unstructured.NestedString(u.Object, "status", "state")
			if states[u.GetName()] == "ACTIVE" {
				active--
			}
			if s == "ACTIVE" {
				active++
			}
			states[u.GetName()] = s
		case <-ctx.Done():
			require.Fail(b, "timed out", "%d of %d Pairs ACTIVE in %s", active, hubBenchInstances, ns)
		}
	}
	return created
}

// applyPairFloor applies the run's 400 ConfigMaps directly, 200 on each
// spoke, with server-side apply at the run's concurrency.
func applyPairFloor(b *testing.B, fleet *fgtesting.Fleet, ns string) (time.Duration, int64) {
	var n atomic.Int64
	clients := map[string]client.Client{}
	for _, s := range fleet.Spokes() {
		clients[s.Name] = benchClient(b, countedConfig(s.Config, &n))
	}
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
	return time.Since(start), n.Load()
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

// countingRoundTripper counts the requests made through it and, when
// kinds is set, each kind of request (cluster, verb and resource).
type countingRoundTripper struct {
	next    http.RoundTripper
	n       *atomic.Int64
	cluster string
	kinds   *requestKinds
}

func (c countingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	c.kinds.add(c.cluster, r)
	return c.next.RoundTrip(r)
}

func countedConfig(cfg *rest.Config, n *atomic.Int64) *rest.Config {
	return countedByKind(cfg, n, "", nil)
}

func countedByKind(cfg *rest.Config, n *atomic.Int64, cluster string, kinds *requestKinds) *rest.Config {
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
