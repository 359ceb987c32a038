//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/crds"
	"github.com/fleetgraph/fleetgraph/internal/steps"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// BenchmarkCRDFanOut measures, in one run against one fleet, how long a new
// graph takes from RegisterGraph until its CRD is established on every
// spoke: with 1 spoke and with 3. Fan-out runs per spoke in parallel, so 3
// spokes should cost little more than 1 (target: at most 1.3x).
//
// For scale it also measures the floor: creating a CRD directly and waiting
// for Established, on 1 spoke and on 3 at once. On a 2-core machine the
// three API servers compete for CPU while they establish a CRD, so the
// floor's own ratio is well above 1.
//
// It prints where the time goes: RegisterGraph's own steps, the wait until
// the runtime's gate asks for the CRD, each step of the fan-out on the
// cluster that finished last, and the wait until FleetStatus shows it.
func BenchmarkCRDFanOut(b *testing.B) {
	fleet := fgtesting.StartFleet(b, 3)
	ctx := context.Background()
	one := fgtesting.NewProvider()
	s1 := fleet.Spoke("spoke-1")
	require.NoError(b, one.AddConfig(ctx, s1.Name, s1.Config))
	all, err := fleet.NewProvider(ctx)
	require.NoError(b, err)
	hubs := map[int]*sdk.Hub{
		1: startHub(b, fleet.Hub.Config, one, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}}),
		3: startHub(b, fleet.Hub.Config, all, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}}),
	}
	// A hub's first graph also installs the GraphRevision CRD on the hub
	// and reads the hub's and the spokes' OpenAPI documents: once per hub,
	// not per graph. It is shown, not counted.
	for _, n := range []int{1, 3} {
		first := registerAndWait(b, hubs[n], newStepLog(), fmt.Sprintf("Warm%d", n), n)
		fmt.Printf("first graph after the hub started (%d spokes, not counted): %.0f ms\n", n, first.Seconds()*1000)
	}
	steps := map[int]*stepLog{1: newStepLog(), 3: newStepLog()}
	for n, h := range hubs {
		sdk.ObserveSteps(h, steps[n].observe)
	}

	spokes := fleet.Spokes()
	total, floor := map[int]time.Duration{}, map[int]time.Duration{}
	for i := 0; b.Loop(); i++ {
		for _, n := range []int{1, 3} {
			total[n] += registerAndWait(b, hubs[n], steps[n], fmt.Sprintf("Bench%dOn%d", i, n), n)
			floor[n] += createAndWait(b, spokes[:n], fmt.Sprintf("Floor%dOn%d", i, n))
		}
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(ms(total[1]), "ms/1-spoke")
	b.ReportMetric(ms(total[3]), "ms/3-spokes")
	b.ReportMetric(ms(total[3])/ms(total[1]), "ratio")
	b.ReportMetric(ms(floor[3])/ms(floor[1]), "floor-ratio")
	b.ReportMetric(ms(total[1])/ms(floor[1]), "x-floor/1-spoke")
	b.ReportMetric(ms(total[3])/ms(floor[3]), "x-floor/3-spokes")
	fmt.Printf("CRD established via fleetgraph: 1 spoke %.0f ms, 3 spokes %.0f ms; 3-spokes/1-spoke ratio: %.2fx (%d graphs each)\n",
		ms(total[1]), ms(total[3]), ms(total[3])/ms(total[1]), b.N)
	fmt.Printf("floor (direct create + wait): 1 spoke %.0f ms, 3 spokes %.0f ms; ratio: %.2fx\n",
		ms(floor[1]), ms(floor[3]), ms(floor[3])/ms(floor[1]))
	fmt.Printf("fleetgraph / floor: 1 spoke %.2fx, 3 spokes %.2fx\n", ms(total[1])/ms(floor[1]), ms(total[3])/ms(floor[3]))
	printSteps(steps, b.N)
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

// printSteps prints the mean of each step per graph, for 1 and 3 spokes.
func printSteps(logs map[int]*stepLog, n int) {
	fmt.Printf("%-16s %10s %10s\n", "where (ms)", "1 spoke", "3 spokes")
	for _, row := range stepRows {
		label := row
		if concurrent[row] {
			label = "  " + row // at once, within checks
		}
		fmt.Printf("%-16s %10.1f %10.1f\n", label,
			logs[1].sums[row].Seconds()*1000/float64(n), logs[3].sums[row].Seconds()*1000/float64(n))
	}
}

// createAndWait creates a CRD of the given kind directly on each cluster at
// once and returns the time until it is established on all of them.
func createAndWait(b *testing.B, clusters []*fgtesting.Cluster, kind string) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for _, cl := range clusters {
		wg.Go(func() {
			c, err := client.New(cl.Config, client.Options{})
			if !assert.NoError(b, err) {
				return
			}
			crd := widgetCRD()
			plural := strings.ToLower(kind) + "s"
			crd.Name = plural + "." + crd.Spec.Group
			crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"}
			u, err := crds.ApplyObject(crd)
			if assert.NoError(b, err) && assert.NoError(b, c.Create(context.Background(), u)) {
				_, err := crds.WaitEstablished(context.Background(), c, crd.Name, crds.PollInterval, crds.EstablishTimeout, crds.RequestTimeout)
				assert.NoError(b, err)
			}
		})
	}
	wg.Wait()
	return time.Since(start)
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
