//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const relabelInstances = 100

// BenchmarkRelabel100 measures what a relabel costs: 100 instances of a
// graph whose ConfigMap holds cluster.labels.tier, on one cluster. Each
// sample changes the tier, tells the runtime (ClusterLabelsChanged, as a
// provider that notifies does; the poll is off, so no part of a sample is
// waiting for it) and ends when a watch of the ConfigMaps shows every one
// holding the new tier (watchConfigMaps).
//
// The floor is the same 100 updates made directly: server-side applies
// that change the value of 100 existing ConfigMaps as large as the
// runtime's (as many labels and annotations, as long: childShape),
// spoke.DefaultWorkers at a time, through one client made before the clock, ending when the same
// watch shows them all. It reads nothing before writing, and nothing of it
// watches what it writes. The bare floor does the same to ConfigMaps
// without labels or annotations (the floor before 2026-12-07), to show
// what the objects' size alone costs. Each iteration takes one sample of
// each, rotating which goes first, so that the machine's drift falls on
// all; x-floor and x-bare-floor are the ratios of their sums. The runtime and the floor have no client-side rate limit
// (fgtesting.NoRateLimit). It prints where a sample's time goes (until the
// first write, the writes, until the watch shows them), the API server's
// CPU per sample and its account of the samples.
func BenchmarkRelabel100(b *testing.B) {
	cl, err := fgtesting.StartCluster("relabel", fgtesting.ClusterOptions{})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, cl.Stop()) })
	cfg := fgtesting.NoRateLimit(cl.Config)
	c, err := client.New(cfg, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(b, err)
	g := relabelGraph(b)
	benchInstallCRD(b, c, g.CRD)

	var requests atomic.Int64
	clocks := [2]*requestClock{{}, {}} // the runtime's writes, the floor's
	mgr, err := manager.New(countedConfig(cfg, &requests, clocks[0]), manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(b, err)
	labels := &labelSource{labels: map[string]string{"tier": "t0"}}
	rt := spoke.New(spoke.Options{ClusterLabels: labels.get, ClusterLabelsPoll: -1})
	require.NoError(b, rt.SetupWithManager(mgr))
	require.NoError(b, rt.Serve(spoke.Version{Graph: g, Revision: 1}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	b.Cleanup(func() { cancel(); require.NoError(b, <-done) })

	seen := watchConfigMaps(b, ctx, cfg)
	for i := range relabelInstances {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": "x"}}}
		u.SetGroupVersionKind(g.Instance.GVK)
		u.SetNamespace("default")
		u.SetName(fmt.Sprintf("r%03d", i))
		require.NoError(b, c.Create(ctx, u))
	}
	waitAllHold(b, seen, relabelChild, "t0")
	var floorRequests atomic.Int64
	fc, err := client.New(countedConfig(cfg, &floorRequests, clocks[1]), client.Options{})
	require.NoError(b, err)
	meta := childShape(b, seen)
	// The floors' ConfigMaps exist, and their client is warm, before the
	// first sample.
	applyFloor(b, fc, "floor", "t0", meta)
	waitAllHold(b, seen, floorChild, "t0")
	applyFloor(b, fc, "bare", "t0", floorMeta{})
	waitAllHold(b, seen, bareChild, "t0")

	relabel := func(tier string) {
		labels.set(map[string]string{"tier": tier})
		rt.ClusterLabelsChanged()
		waitAllHold(b, seen, relabelChild, tier)
	}
	floor := func(tier string) {
		applyFloor(b, fc, "floor", tier, meta)
		waitAllHold(b, seen, floorChild, tier)
	}
	bare := func(tier string) {
		applyFloor(b, fc, "bare", tier, floorMeta{})
		waitAllHold(b, seen, bareChild, tier)
	}
	var took [3]time.Duration // relabels, floors, bare floors
	var apiserver [3]fgtesting.ProcessCPU
	var phases [3]samplePhases
	var loads [3]fgtesting.ServerLoad
	var relabelRequests int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tier := fmt.Sprintf("t%d", i+1)
		for j := range 3 {
			k := (i + j) % 3
			load0 := serverLoad(b, cl) // read outside the CPU's window: /metrics is large
			cpu0, requests0 := serverCPU(b, cl), requests.Load()
			clocks[min(k, 1)].reset()
			start := time.Now()
			switch k {
			case 0:
				relabel(tier)
				relabelRequests += requests.Load() - requests0
			case 1:
				floor(tier)
			default:
				bare(tier)
			}
			end := time.Now()
			took[k] += end.Sub(start)
			phases[k].add(start, end, clocks[min(k, 1)])
			apiserver[k] = apiserver[k].Add(serverCPU(b, cl).Sub(cpu0))
			loads[k] = loads[k].Add(serverLoad(b, cl).Sub(load0))
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(per(took[0]), "ms/relabel")
	b.ReportMetric(per(took[1]), "floor-ms")
	b.ReportMetric(float64(took[0])/float64(took[1]), "x-floor")
	b.ReportMetric(per(took[2]), "bare-floor-ms")
	b.ReportMetric(float64(took[0])/float64(took[2]), "x-bare-floor")
	b.ReportMetric(float64(relabelRequests)/float64(b.N*relabelInstances), "req/instance")
	fmt.Printf("relabel %.1f ms, floor %.1f ms (%.2fx), bare floor %.1f ms (%.2fx), %d samples each; server CPU per sample: relabel %s, floor %s, bare floor %s\n",
		per(took[0]), per(took[1]), float64(took[0])/float64(took[1]), per(took[2]), float64(took[0])/float64(took[2]), b.N,
		perSample(apiserver[0], b.N), perSample(apiserver[1], b.N), perSample(apiserver[2], b.N))
	fmt.Printf("where a sample goes, mean ms (until the first write starts / from it until the last write is answered / until the watch shows them all):\n  relabel    %s\n  floor      %s\n  bare floor %s\n",
		phases[0].String(b.N), phases[1].String(b.N), phases[2].String(b.N))
	fmt.Printf("the API server's account of all samples: relabels %s\nfloors %s\nbare floors %s\n", loads[0], loads[1], loads[2])
}

// serverLoad reads the API server's account of its work so far.
func serverLoad(b *testing.B, cl *fgtesting.Cluster) fgtesting.ServerLoad {
	l, err := cl.Load(context.Background())
	require.NoError(b, err)
	return l
}

// samplePhases sums, over samples, the three parts of a sample that its
// writes mark: until the first write starts, from then until the last
// write is answered, and from then until the watch shows every ConfigMap.
type samplePhases struct{ before, writes, after time.Duration }

func (p *samplePhases) add(start, end time.Time, clock *requestClock) {
	first, last := clock.span()
	if first.IsZero() {
		return
	}
	p.before += first.Sub(start)
	p.writes += last.Sub(first)
	p.after += end.Sub(last)
}

func (p samplePhases) String(n int) string {
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(n) }
	return fmt.Sprintf("%6.1f / %6.1f / %6.1f", ms(p.before), ms(p.writes), ms(p.after))
}

// requestClock records when the first write (PATCH) through a client
// started and when the last was answered, since its last reset.
type requestClock struct {
	mu                 sync.Mutex
	since, first, last time.Time
}

// reset forgets the writes so far: from now on, only writes started
// after it count.
func (c *requestClock) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.since, c.first, c.last = time.Now(), time.Time{}, time.Time{}
}

func (c *requestClock) span() (time.Time, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first, c.last
}

func (c *requestClock) record(start, end time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if start.Before(c.since) {
		return // the tail of an earlier sample
	}
	if c.first.IsZero() || start.Before(c.first) {
		c.first = start
	}
	if end.After(c.last) {
		c.last = end
	}
}

// perSample divides a CPU total by n samples.
func perSample(cpu fgtesting.ProcessCPU, n int) fgtesting.ProcessCPU {
	return fgtesting.ProcessCPU{APIServer: cpu.APIServer / time.Duration(n), Etcd: cpu.Etcd / time.Duration(n)}
}

// serverCPU reads the CPU cl's kube-apiserver and etcd have used.
func serverCPU(b *testing.B, cl *fgtesting.Cluster) fgtesting.ProcessCPU {
	cpu, err := cl.CPU()
	require.NoError(b, err)
	return cpu
}

// The ConfigMaps of BenchmarkRelabel100: the graph's children, and the
// floor's.
var (
	relabelChild = regexp.MustCompile(`^r\d{3}-config$`)
	floorChild   = regexp.MustCompile(`^floor\d{3}$`)
	bareChild    = regexp.MustCompile(`^bare\d{3}$`)
)

func relabelGraph(b *testing.B) *graph.Graph {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(b, yaml.UnmarshalStrict([]byte(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: relabel}
spec:
  schema: {apiVersion: v1alpha1, kind: Relabel, spec: {name: string}}
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: '${schema.metadata.name + "-config"}'}
      data: {value: '${cluster.labels.?tier.orValue("none")}'}
`), rgd))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(b, err)
	return g
}

// watchConfigMaps returns a cache of the ConfigMaps in "default", synced.
// A sample ends when it shows them all holding the new value: a watch
// costs the API server one event per write, for the relabel and the floor
// alike, where polling with a List would load the server while the
// runtime writes and not while the floor does (its writes have ended
// before it first looks).
func watchConfigMaps(b *testing.B, ctx context.Context, cfg *rest.Config) cache.Cache {
	seen, err := cache.New(cfg, cache.Options{Scheme: fgtesting.NewScheme(), DefaultNamespaces: map[string]cache.Config{"default": {}}})
	require.NoError(b, err)
	go func() { _ = seen.Start(ctx) }()
	_, err = seen.GetInformer(ctx, &corev1.ConfigMap{})
	require.NoError(b, err)
	require.True(b, seen.WaitForCacheSync(ctx))
	return seen
}

// waitAllHold waits until seen shows relabelInstances ConfigMaps whose
// names match names holding value (polled every 2 ms, in memory).
func waitAllHold(b *testing.B, seen client.Reader, names *regexp.Regexp, value string) {
	b.Helper()
	require.Eventually(b, func() bool {
		list := &corev1.ConfigMapList{}
		if err := seen.List(context.Background(), list, client.InNamespace("default"), client.UnsafeDisableDeepCopy); err != nil {
			return false
		}
		n := 0
		for _, cm := range list.Items {
			if cm.Data["value"] == value && names.MatchString(cm.Name) {
				n++
			}
		}
		return n == relabelInstances
	}, wait, 2*time.Millisecond)
}

// floorMeta is the labels and annotations the floor's ConfigMaps carry.
type floorMeta struct{ labels, annotations map[string]string }

// childShape returns labels and annotations as many and as long as those
// the runtime wrote on its first child: every key's first letter changed
// ("kro.run/owned" becomes "xro.run/owned"), so that no selector of the
// runtime matches the floor's ConfigMaps, and the values kept. The floor
// then writes objects of the same size as the runtime's, which the API
// server's apply costs in proportion to.
func childShape(b *testing.B, seen client.Reader) floorMeta {
	b.Helper()
	cm := &corev1.ConfigMap{}
	require.NoError(b, seen.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "r000-config"}, cm))
	mangle := func(in map[string]string) map[string]string {
		out := make(map[string]string, len(in))
		for k, v := range in {
			out["x"+k[1:]] = v
		}
		return out
	}
	m := floorMeta{labels: mangle(cm.Labels), annotations: mangle(cm.Annotations)}
	fmt.Printf("the runtime's child carries %d labels and %d annotations (%d bytes); the floor's the same, renamed\n",
		len(cm.Labels), len(cm.Annotations), metaBytes(cm.Labels)+metaBytes(cm.Annotations))
	return m
}

// metaBytes is the length of m's keys and values.
func metaBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// applyFloor sets value in relabelInstances ConfigMaps named prefix000...,
// with meta's labels and annotations, by server-side apply,
// spoke.DefaultWorkers at a time.
func applyFloor(b *testing.B, c client.Client, prefix, value string, meta floorMeta) {
	b.Helper()
	sem := make(chan struct{}, spoke.DefaultWorkers)
	var wg sync.WaitGroup
	for i := range relabelInstances {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("%s%03d", prefix, i), "namespace": "default"},
				"data":     map[string]any{"value": value},
			}}
			u.SetLabels(meta.labels)
			u.SetAnnotations(meta.annotations)
			assert.NoError(b, c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("floor"), client.ForceOwnership))
		})
	}
	wg.Wait()
}

func benchInstallCRD(b *testing.B, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	b.Helper()
	require.NoError(b, c.Create(context.Background(), crd.DeepCopy()))
	require.Eventually(b, func() bool {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if c.Get(context.Background(), client.ObjectKeyFromObject(crd), got) != nil {
			return false
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	}, wait, tick)
}

type countingRoundTripper struct {
	next  http.RoundTripper
	n     *atomic.Int64
	clock *requestClock
}

func (c countingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	start := time.Now()
	resp, err := c.next.RoundTrip(r)
	if c.clock != nil && r.Method == http.MethodPatch {
		c.clock.record(start, time.Now())
	}
	return resp, err
}

// countedConfig counts the requests of clients made from cfg and, with
// clock, times their writes.
func countedConfig(cfg *rest.Config, n *atomic.Int64, clock *requestClock) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countingRoundTripper{next: rt, n: n, clock: clock}
	}
	return cfg
}
