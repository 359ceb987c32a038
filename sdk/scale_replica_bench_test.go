//go:build integration

package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// BenchmarkScale's replicas are this test binary run again with these
// variables set (see runScaleReplica), besides scaleReplicaEnv (its ID):
// the hub's kubeconfig and the file it reports on.
const (
	scaleKubeconfigEnv = "FLEETGRAPH_SCALE_KUBECONFIG"
	scaleReportEnv     = "FLEETGRAPH_SCALE_REPORT"
	// scaleClustersEnv is how many simulated clusters the run has (their
	// names are simNames'), for a replica whose provider is told them.
	scaleClustersEnv = "FLEETGRAPH_SCALE_CLUSTERS"
)

// scaleSample is how often a replica samples the clusters it serves: the
// granularity of the double-serving detector (scaleSpan).
const scaleSample = 100 * time.Millisecond

func init() { scaleReplica = runScaleReplica }

// scaleReport is what a replica tells BenchmarkScale, rewritten as a whole
// every second (written aside and renamed, so never read half-written).
type scaleReport struct {
	ID  string `json:"id"`
	PID int    `json:"pid"`
	// Idle is the replica's footprint (after GC) with its hub built and
	// the graph registered, before the manager starts: no cluster, no
	// coordinator, no informer.
	Idle fgtesting.Footprint `json:"idle"`
	// Measured is the footprint after a settle, taken on each SIGUSR1;
	// Measures counts them.
	Measured fgtesting.Footprint `json:"measured"`
	Measures int                 `json:"measures"`
	// Clusters the hub serves now, and Served those among them whose
	// graph's CRD is healthy there.
	Clusters []string `json:"clusters"`
	Served   int      `json:"served"`
	// Spans are, per cluster, the intervals during which the hub served
	// it, as sampled every scaleSample (wall clock, UnixNano; To 0 while
	// open).
	Spans map[string][]scaleSpan `json:"spans"`
}

// scaleSpan is one interval during which a replica served a cluster.
type scaleSpan struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// pprofAddress is where replica-<i> serves net/http/pprof when
// SCALE_PPROF names a base port (replica-<i> listens on base+i), else
// nowhere.
func pprofAddress(id string) string {
	base, err := strconv.Atoi(os.Getenv("SCALE_PPROF"))
	if err != nil {
		return ""
	}
	i, err := strconv.Atoi(strings.TrimPrefix(id, "replica-"))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", base+i)
}

// runScaleReplica runs one sharded hub replica until it is killed or its
// parent dies, and returns its exit code.
func runScaleReplica() int {
	fgtesting.SetupLogs()
	id, out := os.Getenv(scaleReplicaEnv), os.Getenv(scaleReportEnv)
	if err := serveAsReplica(id, out); err != nil {
		fmt.Fprintf(os.Stderr, "scale replica %s: %v\n", id, err)
		return 1
	}
	return 0
}

func serveAsReplica(id, out string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(scaleKubeconfigEnv))
	if err != nil {
		return fmt.Errorf("reading the hub's kubeconfig: %w", err)
	}
	cfg = fgtesting.NoRateLimit(cfg)
	provider, engage, err := scaleProvider(cfg)
	if err != nil {
		return err
	}
	hubClient, err := sdk.NewShardingClient(cfg)
	if err != nil {
		return err
	}
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		PprofBindAddress:       pprofAddress(id),
	}, mcmanager.WithCoordinator(sdk.NewShardedCoordinator(hubClient, sdk.ShardingOptions{ID: id,
		// Its decisions, and at V(1) every failed round, go to the
		// replica's log: what the run says about the coordinator.
		Logger: zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.DebugLevel)).WithName("shard")})))
	if err != nil {
		return err
	}
	h, err := sdk.NewHub(provider, sdk.Options{
		RGDs:     sdk.RGDOptions{DisableController: true},
		Fleet:    sdk.FleetOptions{DepartureGrace: -1},
		Replicas: sdk.ReplicaOptions{ID: id},
	})
	if err != nil {
		return err
	}
	if err := h.SetupWithManager(mgr); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := h.RegisterGraph(ctx, scaleRGD(1)); err != nil {
		return err
	}
	idle, err := fgtesting.MeasureFootprint()
	if err != nil {
		return err
	}
	if err := engage(ctx); err != nil {
		return err
	}
	r := &replicaState{report: scaleReport{ID: id, PID: os.Getpid(), Idle: idle, Spans: map[string][]scaleSpan{}}, out: out}
	go r.sample(ctx, h)
	go r.measureOnSignal(ctx)
	go reviseOnSignal(ctx, h)
	go exitWithParent(cancel)
	return mgr.Start(ctx)
}

// scaleProvider is a replica's provider of the simulated clusters, as
// SCALE_SIM chooses (see BenchmarkScale), and what makes it engage them,
// called once the replica's idle footprint is measured: with "shared",
// every cluster object is made then (the namespace provider makes its own
// as it sees the namespaces, once the manager runs).
func scaleProvider(cfg *rest.Config) (multicluster.Provider, func(context.Context) error, error) {
	switch sim := scaleSim(); sim {
	case "namespace":
		p, err := fgtesting.NewNamespaceProvider(cfg, fgtesting.NamespaceProviderOptions{Prefix: simPrefix})
		return p, func(context.Context) error { return nil }, err
	case "shared":
		n, err := strconv.Atoi(os.Getenv(scaleClustersEnv))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", scaleClustersEnv, err)
		}
		shared, err := fgtesting.NewSharedConnection(cfg)
		if err != nil {
			return nil, nil, err
		}
		p := fgtesting.NewProvider()
		return p, func(ctx context.Context) error { return p.AddSimulated(ctx, cfg, simNames(n), shared) }, nil
	default:
		return nil, nil, fmt.Errorf("SCALE_SIM=%q: want shared or namespace", sim)
	}
}

// scaleSim is how the simulated clusters are made (SCALE_SIM, default
// "shared"; see BenchmarkScale).
func scaleSim() string { return envOr("SCALE_SIM", "shared") }

// replicaState is a replica's report, kept up to date.
type replicaState struct {
	mu     sync.Mutex
	report scaleReport
	out    string
}

// sample records, every scaleSample, which clusters the hub serves, and
// writes the report every second.
func (r *replicaState) sample(ctx context.Context, h *sdk.Hub) {
	tick := time.NewTicker(scaleSample)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now, clusters := time.Now().UnixNano(), h.Clusters()
		served := countServed(h, []schema.GroupVersionKind{scaleKind})
		r.mu.Lock()
		r.report.Clusters, r.report.Served = clusters, served
		for _, cl := range clusters {
			spans := r.report.Spans[cl]
			if len(spans) == 0 || spans[len(spans)-1].To != 0 {
				r.report.Spans[cl] = append(spans, scaleSpan{From: now})
			}
		}
		for cl, spans := range r.report.Spans {
			// Clusters are sorted: a linear search here was 15% of a
			// replica's CPU at 2,500 clusters, sampled every 100 ms.
			if last := &spans[len(spans)-1]; last.To == 0 {
				if _, found := slices.BinarySearch(clusters, cl); !found {
					last.To = now
				}
			}
		}
		r.mu.Unlock()
		if i%int(time.Second/scaleSample) == 0 {
			r.write()
		}
	}
}

// measureOnSignal measures the settled footprint on every SIGUSR1.
func (r *replicaState) measureOnSignal(ctx context.Context) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	defer signal.Stop(sig)
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
		}
		settleGoroutines()
		f, err := fgtesting.MeasureFootprint()
		if err != nil {
			fmt.Fprintln(os.Stderr, "measuring:", err)
			continue
		}
		r.mu.Lock()
		r.report.Measured, r.report.Measures = f, r.report.Measures+1
		r.mu.Unlock()
		r.write()
	}
}

// reviseOnSignal registers the graph's generation 2 on SIGUSR2, as every
// replica of a hub does when a graph changes (from Go here, as the first).
func reviseOnSignal(ctx context.Context, h *sdk.Hub) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	defer signal.Stop(sig)
	select {
	case <-ctx.Done():
	case <-sig:
		if err := h.RegisterGraph(ctx, scaleRGD(2)); err != nil {
			fmt.Fprintln(os.Stderr, "registering generation 2:", err)
		}
	}
}

// scaleRGD is BenchmarkScale's graph (one ConfigMap that records gen), at
// generation gen.
func scaleRGD(gen int64) *v1alpha1.ResourceGraphDefinition {
	rgd := configMapRGD(panicTB{}, scaleGraph, scaleKind.Kind, gen)
	rgd.Generation = gen
	return rgd
}

func (r *replicaState) write() {
	r.mu.Lock()
	raw, err := json.Marshal(r.report)
	r.mu.Unlock()
	if err == nil {
		tmp := r.out + ".tmp"
		if err = os.WriteFile(tmp, raw, 0o600); err == nil {
			err = os.Rename(tmp, r.out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "writing the report:", err)
	}
}

// exitWithParent stops the replica when the benchmark that started it is
// gone (its parent changes), should the kernel's parent-death signal not
// have reached it.
func exitWithParent(cancel func()) {
	parent := os.Getppid()
	for os.Getppid() == parent {
		time.Sleep(time.Second) // polling interval
	}
	cancel()
	time.Sleep(5 * time.Second) // grace for the manager to stop
	os.Exit(2)
}

// readScaleReport reads the report a replica wrote to dir.
func readScaleReport(dir, id string) (scaleReport, error) {
	var r scaleReport
	raw, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(raw, &r)
}

// panicTB is the testing.TB of a replica, which runs outside any test: a
// failed assertion in a shared helper panics there, ending the replica.
type panicTB struct{ testing.TB }

func (panicTB) Helper()                           {}
func (panicTB) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (panicTB) FailNow()                          { panic("FailNow") }
