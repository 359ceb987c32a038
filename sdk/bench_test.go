//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/crds"
	"github.com/fleetgraph/fleetgraph/internal/steps"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// BenchmarkCRDFanOut measures, in one run against one fleet, how long a new
// graph takes from RegisterGraph until its CRD is established on every
// spoke: with 1 spoke and with 3, each through a hub of its own. Fan-out
// runs per spoke in parallel, so 3 spokes should cost little more than 1.
// Every graph counts, the hub's first included: a hub's first graph also
// installs the GraphRevision CRD on the hub and reads the hub's and the
// spokes' OpenAPI documents, and its user waits for that too (it is also
// reported alone, first-ms).
//
// The floor is the same CRD applied directly (server-side apply) on the
// same spokes at once, polled for Established as often as the hub polls,
// through one client per spoke made and warmed before the clock: the CRD
// the graph compiles to (graphCRD), compiled before the clock, with as many
// labels as the hub puts on it. The bare floor, measured in the same
// samples, applies a CRD of the same names without a schema (the floor
// before 2026-12-07): the API server validates, stores and serves a
// structural schema at a cost the bare floor does not pay. Before
// each sample, of the hubs or of the floor, every hub has settled: neither
// hub has had a request in flight or started one for quietWindow (their
// clients are counted), so no sample shares the servers with what a hub
// still does after the previous one (start watches, write status) or as
// it starts (install the GraphRevision CRD). The samples alternate which
// of a graph and its floor goes first. Hubs and floor have no client-side
// rate limit (fgtesting.NoRateLimit). The floor does not compile, write a
// GraphRevision, read the spoke's kinds and schemas or install an
// admission policy, which the hub does.
//
// It prints where the time goes, for the first graphs and for the others:
// RegisterGraph's own steps, the wait until the runtime's gate asks for
// the CRD, each step of the fan-out on the cluster that finished last, and
// the wait until FleetStatus shows it; and the API servers' CPU (hub and
// spokes) per sample.
func BenchmarkCRDFanOut(b *testing.B) {
	fleet := fgtesting.StartFleet(b, 3)
	ctx := context.Background()
	var requests requestCount // by both hubs, on every cluster
	counted := func(cfg *rest.Config) *rest.Config { return fgtesting.NoRateLimit(countedConfig(cfg, &requests)) }
	spokes := fleet.Spokes()
	one, all := fgtesting.NewProvider(), fgtesting.NewProvider()
	require.NoError(b, one.AddConfig(ctx, spokes[0].Name, counted(spokes[0].Config)))
	for _, s := range spokes {
		require.NoError(b, all.AddConfig(ctx, s.Name, counted(s.Config)))
	}
	hubs := map[int]*sdk.Hub{
		1: startHub(b, counted(fleet.Hub.Config), one, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}}),
		3: startHub(b, counted(fleet.Hub.Config), all, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}}),
	}
	floorClients := make([]client.Client, len(spokes))
	for i, s := range spokes {
		floorClients[i] = benchClient(b, fgtesting.NoRateLimit(s.Config))
		require.NoError(b, floorClients[i].List(ctx, &apiextensionsv1.CustomResourceDefinitionList{}, client.Limit(1)))
	}
	servers := append([]*fgtesting.Cluster{fleet.Hub}, spokes...)

	steps := map[int]*stepLog{1: newStepLog(), 3: newStepLog()}
	for n, h := range hubs {
		sdk.ObserveSteps(h, steps[n].observe)
	}
	total, floor, bare, first := map[int]time.Duration{}, map[int]time.Duration{}, map[int]time.Duration{}, map[int]time.Duration{}
	var cpu [2]fgtesting.ProcessCPU // hubs, floor
	samples := 0
	sample := func(i int, name string) {
		for _, n := range []int{1, 3} {
			hub := func() {
				waitQuiet(b, &requests)
				cpu0 := fleetCPU(b, servers)
				took := registerAndWait(b, hubs[n], steps[n], fmt.Sprintf("%s%dOn%d", name, i+1, n), n)
				cpu[0] = cpu[0].Add(fleetCPU(b, servers).Sub(cpu0))
				total[n] += took
				if i < 0 {
					first[n] = took
				}
			}
			direct := func() {
				waitQuiet(b, &requests)
				cpu0 := fleetCPU(b, servers)
				floor[n] += createAndWait(b, floorClients[:n], graphCRD(b, fmt.Sprintf("Floor%s%dOn%d", name, i+1, n)))
				cpu[1] = cpu[1].Add(fleetCPU(b, servers).Sub(cpu0))
				waitQuiet(b, &requests)
				bare[n] += createAndWait(b, floorClients[:n], bareCRD(b, fmt.Sprintf("Bare%s%dOn%d", name, i+1, n)))
			}
			if i%2 == 0 {
				hub()
				direct()
			} else {
				direct()
				hub()
			}
		}
		samples++
	}
	sample(-1, "First") // each hub's first graph (named First0On1, First0On3)
	firstSteps := sumsOf(steps)
	for i := 0; b.Loop(); i++ {
		sample(i, "Bench")
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(samples) }
	b.ReportMetric(ms(total[1]), "ms/1-spoke")
	b.ReportMetric(ms(total[3]), "ms/3-spokes")
	b.ReportMetric(ms(floor[1]), "floor-ms/1-spoke")
	b.ReportMetric(ms(floor[3]), "floor-ms/3-spokes")
	b.ReportMetric(ms(total[3])/ms(total[1]), "ratio")
	b.ReportMetric(ms(floor[3])/ms(floor[1]), "floor-ratio")
	b.ReportMetric(ms(total[1])/ms(floor[1]), "x-floor/1-spoke")
	b.ReportMetric(ms(total[3])/ms(floor[3]), "x-floor/3-spokes")
	b.ReportMetric(ms(total[1])/ms(bare[1]), "x-bare-floor/1-spoke")
	b.ReportMetric(ms(total[3])/ms(bare[3]), "x-bare-floor/3-spokes")
	b.ReportMetric(first[1].Seconds()*1000, "first-ms/1-spoke")
	b.ReportMetric(first[3].Seconds()*1000, "first-ms/3-spokes")
	fmt.Printf("CRD established via fleetgraph: 1 spoke %.0f ms, 3 spokes %.0f ms; 3-spokes/1-spoke ratio: %.2fx (%d graphs each, the first included: %.0f ms and %.0f ms)\n",
		ms(total[1]), ms(total[3]), ms(total[3])/ms(total[1]), samples, first[1].Seconds()*1000, first[3].Seconds()*1000)
	fmt.Printf("without the first graph: 1 spoke %.0f ms, 3 spokes %.0f ms\n",
		float64((total[1]-first[1]).Milliseconds())/float64(samples-1), float64((total[3]-first[3]).Milliseconds())/float64(samples-1))
	fmt.Printf("floor (direct apply + wait, settled, clients made once): 1 spoke %.0f ms, 3 spokes %.0f ms; ratio: %.2fx\n",
		ms(floor[1]), ms(floor[3]), ms(floor[3])/ms(floor[1]))
	fmt.Printf("fleetgraph / floor: 1 spoke %.2fx, 3 spokes %.2fx\n", ms(total[1])/ms(floor[1]), ms(total[3])/ms(floor[3]))
	fmt.Printf("bare floor (a schemaless CRD of the same names): 1 spoke %.0f ms, 3 spokes %.0f ms; fleetgraph / bare floor: %.2fx, %.2fx\n",
		ms(bare[1]), ms(bare[3]), ms(total[1])/ms(bare[1]), ms(total[3])/ms(bare[3]))
	fmt.Printf("API servers' CPU per graph (hub and 3 spokes, 1- and 3-spoke samples together): fleetgraph %s; floor %s\n",
		perGraph(cpu[0], samples), perGraph(cpu[1], samples))
	printSteps("each hub's first graph", firstSteps, 1)
	printSteps(fmt.Sprintf("mean of the %d graphs after it", samples-1), sumsOf(steps).minus(firstSteps), samples-1)
}

// quietWindow is how long the hubs must have no request in flight and
// start none for waitQuiet to call them settled, and quietMax how long it
// waits at most.
const (
	quietWindow = 300 * time.Millisecond
	quietMax    = 15 * time.Second
)

// waitQuiet waits until no request counted by requests has been in flight
// or started for quietWindow (at most quietMax; it says so if it gave up).
// A request in flight is one not answered yet (a watch is answered when
// its stream opens).
func waitQuiet(b *testing.B, requests *requestCount) {
	start := time.Now()
	busy := func() (int64, bool) {
		started := requests.started.Load()
		return started, requests.answered.Load() < started
	}
	last, inFlight := busy()
	since := time.Now()
	for inFlight || time.Since(since) < quietWindow {
		if time.Since(start) > quietMax {
			fmt.Printf("the hubs did not settle within %s; measuring anyway\n", quietMax)
			return
		}
		time.Sleep(10 * time.Millisecond) // sampling interval
		var n int64
		if n, inFlight = busy(); n != last || inFlight {
			last, since = n, time.Now()
		}
	}
}

// fleetCPU sums the CPU of the clusters' kube-apiservers and etcds.
func fleetCPU(b *testing.B, clusters []*fgtesting.Cluster) fgtesting.ProcessCPU {
	var sum fgtesting.ProcessCPU
	for _, c := range clusters {
		cpu, err := c.CPU()
		require.NoError(b, err)
		sum = sum.Add(cpu)
	}
	return sum
}

// perGraph divides a CPU total over n samples (each a 1-spoke and a
// 3-spoke graph).
func perGraph(cpu fgtesting.ProcessCPU, n int) fgtesting.ProcessCPU {
	return fgtesting.ProcessCPU{APIServer: cpu.APIServer / time.Duration(n), Etcd: cpu.Etcd / time.Duration(n)}
}

// stepLog collects the steps a Hub reports (sdk.ObserveSteps) and, per
// graph, the breakdown of its critical path.
type stepLog struct {
	mu sync.Mutex
	// events of the graph being measured, with the time each ended.
	events []stepEvent
	// sums of each step over all graphs (critical path only).
	sums map[string]time.Duration
}

type stepEvent struct {
	cluster, step string
	took          time.Duration
	end           time.Time
}

// The rows of the breakdown, in the order of the critical path.
var stepRows = []string{
	steps.Compile, steps.Revision, steps.Serve, "to gate",
	steps.Checks, steps.Kinds, steps.Schemas, steps.Read,
	steps.Retract, steps.Apply, steps.Established, steps.Confirm,
	"ensure other", "to status",
}

// concurrent are the steps that run at once within StepChecks, where the
// fan-out reports it: they are shown, but not added to the path.
var concurrent = map[string]bool{steps.Kinds: true, steps.Schemas: true, steps.Read: true}

func newStepLog() *stepLog { return &stepLog{sums: map[string]time.Duration{}} }

func (l *stepLog) observe(_, cluster, step string, took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, stepEvent{cluster: cluster, step: step, took: took, end: time.Now()})
}

// settle adds the graph measured from start to done to the sums: the
// register steps, then the cluster whose Ensure ended last, split into
// the wait for its gate, its steps, the rest of Ensure and the wait until
// FleetStatus showed it.
func (l *stepLog) settle(start, done time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	events := l.events
	l.events = nil
	var registered time.Time
	var last *stepEvent
	for i, e := range events {
		switch {
		case e.cluster == "":
			l.sums[e.step] += e.took
			registered = e.end
		case e.step == steps.Ensure && (last == nil || e.end.After(last.end)):
			last = &events[i]
		}
	}
	if last == nil || registered.IsZero() {
		return
	}
	ensureStart := last.end.Add(-last.took)
	l.sums["to gate"] += ensureStart.Sub(registered)
	var mine []stepEvent
	checks := false // the reads ran at once, within StepChecks
	for _, e := range events {
		if e.cluster == last.cluster && e.step != steps.Ensure && !e.end.Before(ensureStart) && !e.end.After(last.end) {
			mine = append(mine, e)
			checks = checks || e.step == steps.Checks
		}
	}
	inside := time.Duration(0)
	for _, e := range mine {
		l.sums[e.step] += e.took
		if !checks || !concurrent[e.step] {
			inside += e.took
		}
	}
	l.sums["ensure other"] += last.took - inside
	l.sums["to status"] += done.Sub(last.end)
}

// stepSums are the sums of a stepLog's steps, for 1 and 3 spokes.
type stepSums map[int]map[string]time.Duration

// sumsOf copies the logs' sums so far.
func sumsOf(logs map[int]*stepLog) stepSums {
	out := stepSums{}
	for n, l := range logs {
		l.mu.Lock()
		out[n] = maps.Clone(l.sums)
		l.mu.Unlock()
	}
	return out
}

// minus returns s less o, step by step.
func (s stepSums) minus(o stepSums) stepSums {
	out := stepSums{}
	for n, sums := range s {
		out[n] = map[string]time.Duration{}
		for step, d := range sums {
			out[n][step] = d - o[n][step]
		}
	}
	return out
}

// printSteps prints the mean of each step per graph over n graphs, for 1
// and 3 spokes.
func printSteps(title string, sums stepSums, n int) {
	fmt.Printf("%-16s %10s %10s   %s\n", "where (ms)", "1 spoke", "3 spokes", title)
	for _, row := range stepRows {
		label := row
		if concurrent[row] {
			label = "  " + row // at once, within checks
		}
		fmt.Printf("%-16s %10.1f %10.1f\n", label,
			sums[1][row].Seconds()*1000/float64(n), sums[3][row].Seconds()*1000/float64(n))
	}
}

// createAndWait applies crd directly on each cluster at once, through its
// client, and returns the time until it is established on all of them.
func createAndWait(b *testing.B, clients []client.Client, crd *unstructured.Unstructured) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			u := crd.DeepCopy()
			if assert.NoError(b, c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("floor"))) {
				_, err := crds.WaitEstablished(context.Background(), c, u.GetName(), crds.PollInterval, crds.EstablishTimeout, crds.RequestTimeout)
				assert.NoError(b, err)
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// graphCRD is, as an apply object, the CRD the hub applies for a graph of
// the given kind (oneConfigMapRGD, which registerAndWait registers): the
// same schema, with the labels the hub puts on it (its own and the
// revision's), each key's first letter changed so that no hub's watch
// takes it for one of its CRDs.
func graphCRD(b *testing.B, kind string) *unstructured.Unstructured {
	g, err := graph.Compile(oneConfigMapRGD(b, kind), graph.Options{})
	require.NoError(b, err)
	u, err := crds.ApplyObject(g.CRD)
	require.NoError(b, err)
	labels := map[string]string{}
	for k, v := range u.GetLabels() {
		labels["x"+k[1:]] = v
	}
	labels["x"+fgv1alpha1.LabelGraphRevision[1:]] = "1"
	u.SetLabels(labels)
	return u
}

// bareCRD is a CRD of the names graphCRD gives kind, without a schema
// (the floor before 2026-12-07).
func bareCRD(b *testing.B, kind string) *unstructured.Unstructured {
	crd := widgetCRD()
	plural := strings.ToLower(kind) + "s"
	crd.Name = plural + "." + crd.Spec.Group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"}
	u, err := crds.ApplyObject(crd)
	require.NoError(b, err)
	return u
}

// registerAndWait registers a one-ConfigMap graph of the given kind and
// returns the time until its CRD is established on n clusters.
func registerAndWait(b *testing.B, h *sdk.Hub, steps *stepLog, kind string, n int) time.Duration {
	rgd := oneConfigMapRGD(b, kind)
	start := time.Now()
	require.NoError(b, h.RegisterGraph(context.Background(), rgd))
	for {
		est := 0
		for _, c := range h.FleetStatus(rgd.Name).Clusters {
			if c.CRD.Healthy() {
				est++
			}
		}
		if est == n {
			done := time.Now()
			steps.settle(start, done)
			return done.Sub(start)
		}
		require.Less(b, time.Since(start), wait, "graph %s not established on %d spokes", kind, n)
		time.Sleep(2 * time.Millisecond) // measurement granularity, not synchronisation
	}
}
