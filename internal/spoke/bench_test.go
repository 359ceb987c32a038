//go:build integration

package spoke_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	benchInstances   = 500
	benchConcurrency = 8
)

// countingTransport counts the requests a client makes.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

func counted(cfg *rest.Config, n *atomic.Int64) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: n} }
	return cfg
}

// BenchmarkWebApp500 measures the reference workload (/work/shared/bench):
// 500 WebApp instances on one spoke, created with concurrency 8, until all
// are ACTIVE; against the floor of writing the same 2,000 objects directly
// with server-side apply at the same concurrency on the same API server,
// measured before and after the controller.
//
// The floor's client, the writes-only client and the user's client that
// creates the instances are each made once per round and warmed (their
// REST mappings known) before anything is timed; they, and the runtime,
// have no client-side rate limit (fgtesting.NoRateLimit). The floor makes
// 4 requests per instance (the instance's write stands for the user's
// create) and no reads; it writes no status, stamps no finalizer and
// watches nothing, which the runtime must.
func BenchmarkWebApp500(b *testing.B) { benchWebApp(b, "instances", runController) }

// BenchmarkWebApp500WritesOnly measures, in place of the controller, a
// client that makes only the writes the spoke runtime's contract needs:
// each instance created, its three children applied with our ownership
// labels, its status written, with the admission policy installed; no
// watches, no graph. Its ratio to the floor is the least any
// implementation could reach here.
func BenchmarkWebApp500WritesOnly(b *testing.B) { benchWebApp(b, "writes-only", runWritesOnly) }

// runner makes 500 instances ACTIVE in namespace ns and returns the wall
// time and the requests it made (the user's creates not counted).
type runner func(b *testing.B, cl roundClients, g *graph.Graph, ns string) (time.Duration, int64)

// roundClients are a round's clients, made once and warmed before anything
// is timed, none with a client-side rate limit.
type roundClients struct {
	// cfg reaches the round's API server, for the runtime's own clients.
	cfg *rest.Config
	// user creates the instances, as a user would.
	user client.Client
	// direct makes the floor's writes and the writes-only run's, counted
	// in requests.
	direct   client.Client
	requests *atomic.Int64
}

func newRoundClients(b *testing.B, srv *fgtesting.Cluster, g *graph.Graph) roundClients {
	cl := roundClients{cfg: fgtesting.NoRateLimit(srv.Config), requests: &atomic.Int64{}}
	cl.user = newClient(b, cl.cfg)
	cl.direct = newClient(b, counted(cl.cfg, cl.requests))
	for _, c := range []client.Client{cl.user, cl.direct} {
		for _, obj := range floorObjects(g, "default", "warm") {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(obj.GroupVersionKind().GroupVersion().WithKind(obj.GetKind() + "List"))
			require.NoError(b, c.List(context.Background(), list, client.InNamespace("default"), client.Limit(1)))
		}
	}
	return cl
}

func benchWebApp(b *testing.B, what string, run runner) {
	rgd, err := os.ReadFile(filepath.Join("testdata", "webapp-rgd.yaml"))
	require.NoError(b, err)
	g := compile(b, string(rgd))

	var ratios, cpuRatios []float64
	for i := range b.N {
		r := benchRound(b, g, run)
		ratios = append(ratios, r.ratio())
		cpuRatios = append(cpuRatios, r.cpuCtrl.total()/r.cpuFloor.total())
		fmt.Printf("round %d: %s/floor ratio: %.2fx (%s %s, floor %s: mean of %s before and %s after)\n",
			i+1, what, r.ratio(), what, r.wall.Round(time.Millisecond), r.floor.Round(time.Millisecond),
			r.floors[0].Round(time.Millisecond), r.floors[1].Round(time.Millisecond))
		fmt.Printf("requests/instance: %.2f (floor %.2f)\n", r.perInstance(), float64(r.floorReqs)/benchInstances)
		fmt.Printf("CPU during the %s run: %s\nCPU during a floor run (mean of both): %s\n", what, r.cpuCtrl, r.cpuFloor)
		fmt.Printf("the API server's account of the %s run: %s\nand of the first floor run: %s\n", what, r.loadCtrl, r.loadFloor)
		if r.cpuCtrl.apiserver >= 0 {
			b.ReportMetric(r.cpuCtrl.apiserver, "apiserver-cpu-s")
		}
		b.ReportMetric(r.wall.Seconds(), "active-s")
		b.ReportMetric(r.floor.Seconds(), "floor-s")
		b.ReportMetric(r.perInstance(), "requests/instance")
	}
	slices.Sort(ratios)
	slices.Sort(cpuRatios)
	median := ratios[len(ratios)/2]
	b.ReportMetric(median, "ratio")
	b.ReportMetric(cpuRatios[len(cpuRatios)/2], "cpu-ratio")
	fmt.Printf("%s/floor ratio: %.2fx (median of %d rounds, each on a fresh API server); CPU of the API server, etcd and this process, %s/floor: %.2fx (median)\n",
		what, median, len(ratios), what, cpuRatios[len(cpuRatios)/2])
}

// round is one measurement on one fresh API server: the floor, the run
// under test (the controller, or the writes-only client), then the floor
// again. The machine's speed drifts by a fifth within seconds (the same
// floor measured twice in a row differs by up to 20%, in either order), so
// the run is compared with the mean of the floors on either side of it.
type round struct {
	floor, wall       time.Duration
	floors            [2]time.Duration
	floorReqs, reqs   int64
	cpuFloor, cpuCtrl cpuUse
	// loadFloor and loadCtrl are the API server's own account of the first
	// floor and the run.
	loadFloor, loadCtrl fgtesting.ServerLoad
}

func (r round) ratio() float64       { return r.wall.Seconds() / r.floor.Seconds() }
func (r round) perInstance() float64 { return float64(r.reqs) / benchInstances }

func benchRound(b *testing.B, g *graph.Graph, run runner) round {
	b.StopTimer()
	srv, err := fgtesting.StartCluster("bench", fgtesting.ClusterOptions{
		APIServerFlags: map[string]string{"service-cluster-ip-range": "10.96.0.0/16"},
	})
	require.NoError(b, err)
	defer func() { _ = srv.Stop() }()
	c := newClient(b, srv.Config)
	installCRD(b, c, g)
	createNamespace(b, c, "floor")
	createNamespace(b, c, "bench")
	cl := newRoundClients(b, srv, g)
	cpu := cpuMeter()
	b.StartTimer()

	var r round
	cpu0, load0 := cpu(), serverLoad(b, srv)
	r.floors[0], r.floorReqs = applyFloor(b, cl, g, "floor")
	r.cpuFloor, r.loadFloor = cpu().sub(cpu0), serverLoad(b, srv).Sub(load0)
	// Each run starts on an API server as empty as the first found it: the
	// floor's Services would otherwise still hold 500 cluster IPs, and
	// allocating an IP costs more the more are allocated.
	deleteFloor(b, c, g, "floor")
	// The hub installs the admission policy with the CRD; the floor ran
	// without it, as on a cluster without fleetgraph.
	installAdmissionPolicy(b, c, g, map[string]any{"name": "probe"})

	cpu0, load0 = cpu(), serverLoad(b, srv)
	r.wall, r.reqs = run(b, cl, g, "bench")
	r.cpuCtrl, r.loadCtrl = cpu().sub(cpu0), serverLoad(b, srv).Sub(load0)
	deleteInstances(b, c, g, "bench")
	removeAdmissionPolicy(b, c, g, map[string]any{"name": "probe"})

	cpu0 = cpu()
	r.floors[1], _ = applyFloor(b, cl, g, "floor")
	r.cpuFloor = r.cpuFloor.mean(cpu().sub(cpu0))
	r.floor = (r.floors[0] + r.floors[1]) / 2
	b.Logf("floor: %d objects in %s and %s (%d requests); run: %d instances ACTIVE in %s",
		4*benchInstances, r.floors[0].Round(time.Millisecond), r.floors[1].Round(time.Millisecond),
		r.floorReqs, benchInstances, r.wall.Round(time.Millisecond))
	return r
}

// deleteInstances deletes the instances and children a run made, once it
// has stopped: it releases the instances' finalizer itself.
func deleteInstances(b *testing.B, c client.Client, g *graph.Graph, ns string) {
	release := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	parallel(b, benchInstances, func(i int) error {
		return c.Patch(context.Background(), newInstance(g, ns, appName(i), nil), release)
	})
	deleteFloor(b, c, g, ns)
}

// parallel runs f(0..n-1) with benchConcurrency goroutines.
func parallel(b testing.TB, n int, f func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, benchConcurrency)
	for range benchConcurrency {
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

func appName(i int) string { return fmt.Sprintf("app-%05d", i) }

// applyFloor writes the 1,500 children and 500 instances directly with
// SSA through cl.direct, and returns the time and the requests it took.
func applyFloor(b *testing.B, cl roundClients, g *graph.Graph, ns string) (time.Duration, int64) {
	ctx := context.Background()
	before := cl.requests.Load()
	start := time.Now()
	parallel(b, benchInstances, func(i int) error {
		for _, obj := range floorObjects(g, ns, appName(i)) {
			if err := cl.direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
				client.FieldOwner("floor"), client.ForceOwnership); err != nil {
				return err
			}
		}
		return nil
	})
	return time.Since(start), cl.requests.Load() - before
}

// floorObjects is what the WebApp graph renders for one instance, plus the
// instance.
func floorObjects(g *graph.Graph, ns, name string) []*unstructured.Unstructured {
	labels := map[string]any{"app": name}
	obj := func(apiVersion, kind, objName string, body map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: body}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(objName)
		return u
	}
	inst := obj(g.Instance.GVK.GroupVersion().String(), g.Instance.GVK.Kind, name, map[string]any{"spec": map[string]any{"name": name}})
	cm := obj("v1", "ConfigMap", name+"-config", map[string]any{"data": map[string]any{
		"name": name, "image": "nginx", "replicas": "1", "port": "80"}})
	dep := obj("apps/v1", "Deployment", name, map[string]any{
		"metadata": map[string]any{"labels": labels},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "web", "image": "nginx",
					"ports": []any{map[string]any{"containerPort": int64(80)}},
					"env":   []any{map[string]any{"name": "CONFIG_MAP_NAME", "value": name + "-config"}},
				}}},
			},
		},
	})
	dep.SetName(name)
	dep.SetNamespace(ns)
	svc := obj("v1", "Service", name, map[string]any{"spec": map[string]any{
		"selector": labels,
		"ports":    []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(80)}},
	}})
	return []*unstructured.Unstructured{inst, cm, dep, svc}
}

// deleteFloor deletes every object the floor wrote.
func deleteFloor(b *testing.B, c client.Client, g *graph.Graph, ns string) {
	parallel(b, benchInstances, func(i int) error {
		for _, obj := range floorObjects(g, ns, appName(i)) {
			if err := client.IgnoreNotFound(c.Delete(context.Background(), obj)); err != nil {
				return err
			}
		}
		return nil
	})
}

// runController serves the graph in single-cluster mode (the empty cluster
// name), creates the instances and waits until all are ACTIVE.
func runController(b *testing.B, cl roundClients, g *graph.Graph, ns string) (time.Duration, int64) {
	var n atomic.Int64
	ctx, rt, stop := serveSingleCluster(b, counted(cl.cfg, &n), g)
	defer stop()

	n.Store(0)
	start := time.Now()
	parallel(b, benchInstances, func(i int) error {
		return cl.user.Create(ctx, newInstance(g, ns, appName(i), map[string]any{"name": appName(i)}))
	})
	deadline := time.Now().Add(5 * time.Minute)
	for rt.Counts(g.Name)[""].Ready < benchInstances {
		require.True(b, time.Now().Before(deadline), "counts: %v", rt.Counts(g.Name))
		time.Sleep(10 * time.Millisecond)
	}
	wall := time.Since(start)
	fmt.Printf("reconciles/instance: %s\n", reconciles(benchInstances))
	return wall, n.Load()
}

// serveSingleCluster serves g in single-cluster mode (the empty cluster
// name) on the cluster cfg reaches, with the benchmark's concurrency; stop
// ends the runtime and the cluster and waits for them.
func serveSingleCluster(b *testing.B, cfg *rest.Config, g *graph.Graph, opts ...cluster.Option) (context.Context, *spoke.Runtime, func()) {
	cl, err := cluster.New(cfg, opts...)
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop := func() { cancel(); wg.Wait() }
	wg.Go(func() { _ = cl.Start(ctx) })
	if !cl.GetCache().WaitForCacheSync(ctx) {
		stop()
		b.Fatal("the cluster's cache did not sync")
	}
	rt := spoke.New(spoke.Config{Options: instance.Options{Workers: benchConcurrency}})
	wg.Go(func() { _ = rt.Start(ctx) })
	require.NoError(b, rt.Serve(spoke.Version{Graph: g}))
	require.NoError(b, rt.Engage(ctx, "", cl))
	return ctx, rt, stop
}

// runWritesOnly creates the instances and, for each, applies the three
// children with the runtime's ownership labels and writes the status the
// runtime writes for an ACTIVE instance, at the benchmark's concurrency.
func runWritesOnly(b *testing.B, cl roundClients, g *graph.Graph, ns string) (time.Duration, int64) {
	c, creator := cl.direct, cl.user
	ctx := context.Background()
	before := cl.requests.Load()
	start := time.Now()
	parallel(b, benchInstances, func(i int) error {
		objs := floorObjects(g, ns, appName(i))
		inst := objs[0]
		if err := creator.Create(ctx, inst); err != nil {
			return err
		}
		for _, child := range objs[1:] {
			labels := child.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			maps.Copy(labels, map[string]string{
				contract.LabelManagedBy: contract.ManagedBy, contract.LabelGraph: g.Name,
				contract.LabelNodeID: strings.ToLower(child.GetKind()), contract.LabelInstanceUID: string(inst.GetUID()),
				contract.LabelInstanceName: inst.GetName(), contract.LabelInstanceNamespace: ns,
			})
			child.SetLabels(labels)
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(child),
				client.FieldOwner("fleetgraph"), client.ForceOwnership); err != nil {
				return err
			}
		}
		return c.Status().Patch(ctx, inst, client.RawPatch(types.MergePatchType, activeStatus(inst)), client.FieldOwner("fleetgraph"))
	})
	return time.Since(start), cl.requests.Load() - before
}

// activeStatus is the status patch the runtime writes for an ACTIVE WebApp.
func activeStatus(inst *unstructured.Unstructured) []byte {
	now := time.Now().UTC().Format(time.RFC3339)
	var conds []any
	for _, c := range [][3]string{
		{contract.ConditionInstanceManaged, "Managed", instance.MessageManaged},
		{contract.ConditionGraphResolved, "Resolved", instance.MessageResolved},
		{contract.ConditionResourcesReady, "AllResourcesReady", instance.MessageResourcesReady},
		{contract.ConditionReady, "Ready", ""},
	} {
		conds = append(conds, map[string]any{"type": c[0], "status": "True", "reason": c[1], "message": c[2],
			"observedGeneration": inst.GetGeneration(), "lastTransitionTime": now})
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{
		"state": contract.StateActive, "conditions": conds, "deploymentName": inst.GetName()}})
	return patch
}

// cpuUse is CPU seconds used so far by the kube-apiserver and etcd this
// test process started most recently, and by this process (the controller
// and the benchmark's clients). A process not found reads -1.
type cpuUse struct{ apiserver, etcd, self float64 }

// mean is the mean of a and b.
func (a cpuUse) mean(b cpuUse) cpuUse {
	return cpuUse{(a.apiserver + b.apiserver) / 2, (a.etcd + b.etcd) / 2, (a.self + b.self) / 2}
}

// total is the CPU of all three (the machine's work, whatever its load).
func (a cpuUse) total() float64 { return a.apiserver + a.etcd + a.self }

func (a cpuUse) sub(b cpuUse) cpuUse {
	return cpuUse{a.apiserver - b.apiserver, a.etcd - b.etcd, a.self - b.self}
}

func (a cpuUse) String() string {
	return fmt.Sprintf("kube-apiserver %.1fs, etcd %.1fs, controller and clients %.1fs", a.apiserver, a.etcd, a.self)
}

// cpuMeter finds the processes once and returns a function reading them.
func cpuMeter() func() cpuUse {
	apiserver, etcd := childProcess("kube-apiserver"), childProcess("etcd")
	return func() cpuUse {
		var ru syscall.Rusage
		self := -1.0
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
			self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
		return cpuUse{apiserver: processCPU(apiserver), etcd: processCPU(etcd), self: self}
	}
}

// childProcess returns the pid of the newest child of this process named
// comm, or "" if there is none.
func childProcess(comm string) string {
	pid, newest := "", -1.0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		f := procStat(e.Name())
		if len(f) < 22 || f[1] != "("+comm+")" || f[3] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if started, _ := strconv.ParseFloat(f[21], 64); started > newest {
			pid, newest = e.Name(), started
		}
	}
	if pid == "" {
		fmt.Printf("%s process not found; its CPU is not measured\n", comm)
	}
	return pid
}

// processCPU reads the CPU seconds pid used, or -1.
func processCPU(pid string) float64 {
	f := procStat(pid)
	if pid == "" || len(f) < 15 {
		return -1
	}
	utime, _ := strconv.ParseFloat(f[13], 64)
	stime, _ := strconv.ParseFloat(f[14], 64)
	return (utime + stime) / 100 // USER_HZ
}

// procStat returns the fields of /proc/<pid>/stat, numbered from 0: pid,
// (comm), state, ppid, ... utime at 13, stime at 14, starttime at 21.
func procStat(pid string) []string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// reconciles reports fleetgraph_spoke_reconcile_total per instance, by
// result.
func reconciles(instances int) string {
	families, _ := metrics.Registry.Gather()
	var out []string
	for _, f := range families {
		if f.GetName() != "fleetgraph_spoke_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			result := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					result = l.GetValue()
				}
			}
			out = append(out, fmt.Sprintf("%s %.2f", result, m.GetCounter().GetValue()/float64(instances)))
		}
	}
	return strings.Join(out, ", ")
}

// serverLoad reads the API server's account of its work so far.
func serverLoad(b *testing.B, srv *fgtesting.Cluster) fgtesting.ServerLoad {
	l, err := srv.Load(context.Background())
	require.NoError(b, err)
	return l
}
