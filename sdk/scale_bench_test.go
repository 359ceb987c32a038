//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// scaleGraph is BenchmarkScale's graph (one ConfigMap, scaleRGD), and
// scaleKind its instances' kind.
const scaleGraph = "scalebench"

var scaleKind = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "ScaleBench"}

// The targets for each replica.
const (
	targetReplicaRSS = 1 << 30
	targetPerCluster = 1.5 // times the informer floor's memory per cluster
)

// BenchmarkScale serves SCALE_CLUSTERS simulated clusters (default 10,000;
// a namespace each on one API server) with SCALE_REPLICAS hub replicas (default 4),
// each a process of its own (this test binary run again, see
// runScaleReplica) on the sharded coordinator with default timings
// (sdk.NewShardedCoordinator, Options.Replicas.ID, DepartureGrace -1).
// Every replica registers one graph of one ConfigMap from Go; the
// benchmark creates one instance per cluster, from the clock's start, by
// a client retrying each until its kind is served.
//
// It reports:
//   - s-active: the time from the replicas' cold start (the clock starts
//     as their processes are started) until every instance is ACTIVE and
//     every cluster is served by exactly one replica;
//   - per replica: the clusters it serves, its RSS after a settle and GC,
//     and per cluster (RSS minus the same replica's idle footprint, taken
//     with its hub built and graph registered before the manager starts,
//     divided by its clusters) beside the informer floor per cluster
//     (BenchmarkFleet's floor, runFloor, at the per-replica cluster count,
//     in the same run, when SCALE_FLOOR is not 0);
//   - s-rollout (SCALE_SIM=namespace only, see below): with a GraphRollout of one wave (percent 100) applied at
//     the start, the time from signalling every replica to register the
//     graph's generation 2 (SIGUSR2) until the rollout is Complete at
//     revision 2 and every instance's ConfigMap records generation 2 (and
//     s-rollout-children until the latter alone), on every cluster of the run (SCALE_ROLLOUT=0 skips it; run
//     SCALE_CLUSTERS=1000 for the rollout across 1,000 clusters). Its floor
//     is the same revision without a rollout, not measured here
//     (BenchmarkRolloutOneWave compares the two on 4 spokes);
//   - s-takeover: after SIGKILL of the replica serving the most clusters,
//     the time until every one of its instances, whose spec is changed
//     (size 1 to 2) right after the kill, has its ConfigMap rewritten by a
//     survivor, against sdk.ShardingOptions{}.TakeoverBound();
//     s-takeover-owned, until the survivors' hubs list all its clusters;
//     and s-takeover-floor, the time a controller without a hub takes to
//     serve the same clusters on the same server once the takeover is
//     over (takeoverFloor), to compare with the part of s-takeover after
//     s-takeover-owned;
//   - clusters-double-served: clusters that two replicas served at
//     overlapping times. Each replica samples the clusters its hub serves
//     (Hub.Clusters) every scaleSample and reports the intervals; overlaps
//     longer than one sample are certain, shorter ones may be sampling.
//     It sees engagement, not single reconciles: a replica engaged but
//     idle counts as serving (so it may overstate), and an overlap shorter
//     than a sample can be missed.
//
// SCALE_SIM says how every replica sees the simulated clusters:
//   - shared (the default): each cluster a cluster object of its own,
//     confined to its namespace, all over one HTTP connection pool
//     (fgtesting.AddSimulated with a SharedConnection, BenchmarkFleet's
//     "shared" mode): a served cluster has informers of its own, listing
//     and watching its namespace only, as a real cluster's do and as the
//     floor's do;
//   - namespace: multicluster-runtime's namespace provider, whose clusters
//     share one informer per kind over every namespace, each cluster a
//     handler on it: a cluster started is replayed the whole cache (every
//     namespace's objects), every event is offered to every cluster's
//     handler, and each replica caches every namespace, not its share.
//     That fan-out grows with the fleet, where a real fleet's does not,
//     so the memory and takeover figures of this mode are the
//     simulation's as much as the hub's.
//
// In both, every replica's provider holds a cluster object for every
// cluster of the fleet, as a real provider does; the coordinator decides
// which it serves. The rollout runs with "namespace" only: a "shared"
// cluster's uncached reads are not confined to its namespace, and the
// rollout's count of a cluster's instances is such a read.
//
// The floor of the replica-kill time is the coordinator's own bound; the
// floor of the memory is the informers alone. Run it with `make
// bench-scale`; it is not part of make test. Each replica renews one
// Lease per decision (every 5 s by default), whatever the fleet's size.
func BenchmarkScale(b *testing.B) {
	n, err := strconv.Atoi(envOr("SCALE_CLUSTERS", "10000"))
	require.NoError(b, err)
	replicas, err := strconv.Atoi(envOr("SCALE_REPLICAS", "4"))
	require.NoError(b, err)
	perReplica := (n + replicas - 1) / replicas
	floorKiB := 0.0
	if envOr("SCALE_FLOOR", "1") != "0" {
		b.Run(fmt.Sprintf("floor/clusters=%d", perReplica), func(b *testing.B) {
			for range b.N {
				base, after := runFloor(b, perReplica, 1)
				floorKiB = (float64(after.rss) - float64(base.rss)) / 1024 / float64(perReplica)
			}
		})
	}
	b.Run(fmt.Sprintf("replicas=%d/clusters=%d", replicas, n), func(b *testing.B) {
		for range b.N { // one cold start per iteration; run with -benchtime 1x
			runScale(b, n, replicas, floorKiB)
		}
	})
}

// scaleRun is one BenchmarkScale run: the fleet, its replicas and where
// they report.
type scaleRun struct {
	b     *testing.B
	cfg   *rest.Config
	c     client.Client
	names []string
	dir   string
	procs map[string]*exec.Cmd
	// ids are every replica's, live or not; victim is the one killed, at
	// killed.
	ids    []string
	victim string
	killed time.Time
}

func runScale(b *testing.B, n, replicas int, floorKiB float64) {
	fleet, c, names := startFleetNamespaces(b, n)
	dir := b.TempDir()
	files, err := fgtesting.WriteKubeconfigs(dir, fleet.Hub)
	require.NoError(b, err)
	run := &scaleRun{b: b, cfg: fgtesting.NoRateLimit(fleet.Hub.Config), c: c, names: names, dir: dir, procs: map[string]*exec.Cmd{}}
	b.Cleanup(run.killAll)
	ctx := context.Background()

	start := time.Now()
	for i := range replicas {
		run.startReplica(fmt.Sprintf("replica-%d", i), files.Clusters[fleet.Hub.Name])
	}
	go createFleetInstances(ctx, c, []schema.GroupVersionKind{scaleKind}, names)
	rollout := envOr("SCALE_ROLLOUT", "1") != "0"
	if rollout && scaleSim() == "shared" {
		// The rollout counts each cluster's instances with an uncached
		// list, which a "shared" simulated cluster (only its cache is
		// confined to its namespace) answers with every cluster's: its
		// wave would wait forever for "1 of N instances reconciled".
		fmt.Println("scale     rollout skipped: SCALE_SIM=shared clusters list every namespace's instances; run it with SCALE_SIM=namespace")
		rollout = false
	}
	if rollout { // for the new revision later; applied once a replica has installed its CRD
		applyRollout(b, fleet.Hub.Config, scaleGraph, map[string]any{"graph": scaleGraph,
			"waves": []any{map[string]any{"name": "all", "percent": int64(100)}}})
	}
	interval := time.Duration(1+n/5000) * time.Second // a list of the fleet per sample
	active := waitFor(b, "every instance ACTIVE, every cluster served once", interval, run.logState, func() (bool, string) {
		got := countActiveAll(ctx, c, []schema.GroupVersionKind{scaleKind})
		owners, twice := run.owners()
		return got == n && len(owners) == n && twice == 0,
			fmt.Sprintf("%d of %d instances ACTIVE, %d clusters served, %d by two replicas", got, n, len(owners), twice)
	})
	took := active.Sub(start)
	b.ReportMetric(took.Seconds(), "s-active")
	fmt.Printf("scale     replicas=%d clusters=%d  every instance ACTIVE after %.1fs (cold start)\n", replicas, n, took.Seconds())

	run.reportMemory(floorKiB)
	if rollout {
		run.rollOut(ctx)
	}
	run.killOneAndTakeOver(ctx)
	run.reportDoubleServing()
}

// startReplica runs this test binary again as the replica id, reporting to
// run.dir, killed with the benchmark (and by the kernel if the benchmark's
// process dies first).
func (r *scaleRun) startReplica(id, kubeconfig string) {
	log, err := os.Create(filepath.Join(r.dir, id+".log"))
	require.NoError(r.b, err)
	defer log.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), scaleReplicaEnv+"="+id, scaleKubeconfigEnv+"="+kubeconfig,
		scaleReportEnv+"="+filepath.Join(r.dir, id+".json"), scaleClustersEnv+"="+strconv.Itoa(len(r.names)))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(r.b, cmd.Start())
	r.procs[id] = cmd
	r.ids = append(r.ids, id)
}

// killAll kills every replica still running and waits for it.
func (r *scaleRun) killAll() {
	for id, cmd := range r.procs {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		delete(r.procs, id)
	}
}

// reports reads the report of every live replica, by ID.
func (r *scaleRun) reports() map[string]scaleReport {
	out := map[string]scaleReport{}
	for id := range r.procs {
		if rep, err := readScaleReport(r.dir, id); err == nil {
			out[id] = rep
		}
	}
	return out
}

// owners maps each cluster to the live replica serving it, as last
// reported, and counts the clusters that two report serving.
func (r *scaleRun) owners() (map[string]string, int) {
	owners, twice := map[string]string{}, 0
	for id, rep := range r.reports() {
		for _, cl := range rep.Clusters {
			if _, ok := owners[cl]; ok {
				twice++
			}
			owners[cl] = id
		}
	}
	return owners, twice
}

// logState prints, on a timeout, how far each replica got and the end of
// its log.
func (r *scaleRun) logState() {
	for id, rep := range r.reports() {
		r.b.Logf("%s: serves %d clusters, %d with the graph served", id, len(rep.Clusters), rep.Served)
	}
	logNotActive(context.Background(), r.b, r.c, []schema.GroupVersionKind{scaleKind}, 3)
	for id := range r.procs {
		raw, _ := os.ReadFile(filepath.Join(r.dir, id+".log"))
		r.b.Logf("%s log (last 2 KiB):\n%s", id, raw[max(0, len(raw)-2048):])
	}
}

// reportMemory has every replica settle and measure itself, and reports
// each one's RSS and cost per cluster beside the floor's.
func (r *scaleRun) reportMemory(floorKiB float64) {
	for _, cmd := range r.procs {
		require.NoError(r.b, cmd.Process.Signal(syscall.SIGUSR1))
	}
	var reps map[string]scaleReport
	waitFor(r.b, "every replica measured", time.Second, r.logState, func() (bool, string) {
		reps = r.reports()
		done := 0
		for _, rep := range reps {
			if rep.Measures > 0 {
				done++
			}
		}
		return done == len(r.procs), fmt.Sprintf("%d of %d replicas measured", done, len(r.procs))
	})
	mib := func(v uint64) float64 { return float64(v) / (1 << 20) }
	var maxRSS uint64
	var sumKiB float64
	for _, id := range slices.Sorted(maps.Keys(reps)) {
		rep := reps[id]
		owned := max(len(rep.Clusters), 1)
		perKiB := (float64(rep.Measured.RSS) - float64(rep.Idle.RSS)) / 1024 / float64(owned)
		perG := float64(rep.Measured.Goroutines-rep.Idle.Goroutines) / float64(owned)
		maxRSS, sumKiB = max(maxRSS, rep.Measured.RSS), sumKiB+perKiB
		ratio := "no floor run"
		if floorKiB > 0 {
			ratio = fmt.Sprintf("%.2fx the floor's %.0f KiB, target <= %.1fx, %s", perKiB/floorKiB, floorKiB, targetPerCluster, verdict(perKiB <= targetPerCluster*floorKiB))
		}
		fmt.Printf("scale     %s  clusters %5d  rss %5.0f MiB (target <= %.0f MiB, %s)  idle %4.0f MiB  heap %5.0f MiB  goroutines %6d  "+
			"per cluster: %4.0f KiB rss (%s), %.1f goroutines\n",
			id, len(rep.Clusters), mib(rep.Measured.RSS), mib(targetReplicaRSS), verdict(rep.Measured.RSS <= targetReplicaRSS),
			mib(rep.Idle.RSS), mib(rep.Measured.HeapInuse), rep.Measured.Goroutines, perKiB, ratio, perG)
	}
	r.b.ReportMetric(mib(maxRSS), "MiB-rss-max/replica")
	r.b.ReportMetric(sumKiB/float64(len(reps)), "KiB-rss/cluster")
	if floorKiB > 0 {
		r.b.ReportMetric(floorKiB, "KiB-rss/cluster-floor")
	}
}

// killOneAndTakeOver kills the replica serving the most clusters, changes
// each of its instances' spec at once, and measures until the survivors
// list its clusters and have rewritten every one of their ConfigMaps.
func (r *scaleRun) killOneAndTakeOver(ctx context.Context) {
	owners, _ := r.owners()
	count := map[string]int{}
	for _, id := range owners {
		count[id]++
	}
	victim := slices.MaxFunc(slices.Sorted(maps.Keys(count)), func(a, b string) int { return count[a] - count[b] })
	var orphaned []string
	for cl, id := range owners {
		if id == victim {
			orphaned = append(orphaned, cl)
		}
	}
	rewritten, stop := r.watchRewritten(orphaned)
	defer stop()
	var served time.Time
	cmd := r.procs[victim]
	require.NoError(r.b, cmd.Process.Kill())
	killed := time.Now()
	_ = cmd.Wait()
	r.victim, r.killed = victim, killed
	delete(r.procs, victim)
	name := scaleGraph // createFleetInstances names each instance after its kind
	parallel(orphaned, func(ns string) error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(scaleKind)
		u.SetNamespace(ns)
		u.SetName(name)
		return r.c.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"size":2}}`)))
	})
	patched := time.Since(killed)
	bound := sdk.ShardingOptions{}.TakeoverBound()
	var owned time.Time
	waitFor(r.b, "the killed replica's clusters served again", time.Second, r.logState, func() (bool, string) {
		now, _ := r.owners()
		taken := 0
		for _, cl := range orphaned {
			if _, ok := now[cl]; ok {
				taken++
			}
		}
		if taken == len(orphaned) && owned.IsZero() {
			owned = time.Now()
		}
		got, last := rewritten()
		if got == len(orphaned) {
			served = last
		}
		return got == len(orphaned), fmt.Sprintf("%d of %d clusters listed by a survivor, %d of %d instances' ConfigMaps rewritten",
			taken, len(orphaned), got, len(orphaned))
	})
	took := served.Sub(killed)
	r.b.ReportMetric(took.Seconds(), "s-takeover")
	r.b.ReportMetric(owned.Sub(killed).Seconds(), "s-takeover-owned")
	fmt.Printf("scale     killed %s (%d clusters): listed by survivors after %.1fs (sampled, up to 2s late), every instance's change applied after %.1fs "+
		"(seen by a watch; specs changed within %.1fs of the kill; bound %.1fs, %s)\n",
		victim, len(orphaned), owned.Sub(killed).Seconds(), took.Seconds(), patched.Seconds(), bound.Seconds(), verdict(took <= bound))
	synced, floor, failures := r.takeoverFloor(ctx, orphaned)
	r.b.ReportMetric(floor.Seconds(), "s-takeover-floor")
	fmt.Printf("scale     takeover floor, the same %d clusters on the same server after the takeover: informers synced after %.1fs, "+
		"every instance's ConfigMap written after %.1fs (%s); the survivors took %.1fs from listing the clusters to the last change applied (%.2fx)\n",
		len(orphaned), synced.Seconds(), floor.Seconds(), failures, served.Sub(owned).Seconds(), served.Sub(owned).Seconds()/floor.Seconds())
}

// takeoverFloor is what serving the orphaned clusters again costs without
// a hub, measured once the survivors serve them: in this process, per
// cluster an informer of its instances and a metadata informer of its
// ConfigMaps (runFloor's), over one HTTP client with no rate limit, and
// one ConfigMap apply per instance as the informers deliver it, by as many
// workers as the survivors have between them. Its ConfigMaps are named
// apart (suffix "-floor") and it writes no status, so that no replica
// owns or reacts to what it writes. It does not wait for Leases: compare
// it with the time from the survivors listing the clusters to the last
// change applied. It returns when every informer had synced, when every
// ConfigMap was written, and what failed meanwhile.
func (r *scaleRun) takeoverFloor(ctx context.Context, orphaned []string) (synced, done time.Duration, failures string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mapping, err := r.c.RESTMapper().RESTMapping(scaleKind.GroupKind(), scaleKind.Version)
	require.NoError(r.b, err)
	httpClient, err := rest.HTTPClientFor(r.cfg)
	require.NoError(r.b, err)
	dyn, err := dynamic.NewForConfigAndClient(r.cfg, httpClient)
	require.NoError(r.b, err)
	meta, err := metadata.NewForConfigAndClient(r.cfg, httpClient)
	require.NoError(r.b, err)
	floor := newFloorReconciler(dyn)
	floor.suffix = "-floor"
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	start := time.Now()
	var informers []toolscache.SharedIndexInformer
	for _, ns := range orphaned {
		inf := dynamicinformer.NewFilteredDynamicInformer(dyn, mapping.Resource, ns, 0, toolscache.Indexers{}, nil).Informer()
		_, err := inf.AddEventHandler(floor.handler(mapping.Resource))
		require.NoError(r.b, err)
		cms := metadatainformer.NewFilteredMetadataInformer(meta, configMaps, ns, 0, toolscache.Indexers{}, nil).Informer()
		_, err = cms.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
		require.NoError(r.b, err)
		informers = append(informers, inf, cms)
	}
	for _, inf := range informers {
		go inf.RunWithContext(ctx)
	}
	floor.start(ctx, spoke.DefaultWorkers*len(r.procs))
	defer floor.stop()
	at := waitFor(r.b, "the takeover floor's informers synced", 20*time.Millisecond, func() {}, func() (bool, string) {
		n := 0
		for _, inf := range informers {
			if inf.HasSynced() {
				n++
			}
		}
		return n == len(informers), fmt.Sprintf("%d of %d informers synced", n, len(informers))
	})
	end := waitFor(r.b, "the takeover floor's ConfigMaps written", 20*time.Millisecond, func() {}, func() (bool, string) {
		n := floor.applied.Load()
		return n >= int64(len(orphaned)), fmt.Sprintf("%d of %d ConfigMaps written", n, len(orphaned))
	})
	return at.Sub(start), end.Sub(start), floor.failures()
}

// watchRewritten watches the fleet's ConfigMaps until stop is called and
// returns how many of those in the namespaces of orphaned record size 2,
// and when the last of them was first seen so.
func (r *scaleRun) watchRewritten(orphaned []string) (rewritten func() (int, time.Time), stop func()) {
	want := map[string]bool{}
	for _, ns := range orphaned {
		want[ns] = true
	}
	var mu sync.Mutex
	seen := map[string]time.Time{}
	var last time.Time
	cs, err := kubernetes.NewForConfig(r.cfg)
	require.NoError(r.b, err)
	lw := toolscache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = contract.LabelManagedBy + "=" + contract.ManagedBy })
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	record := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok || !want[cm.Namespace] || cm.Data["size"] != "2" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := seen[cm.Namespace]; !ok {
			seen[cm.Namespace] = time.Now()
			last = time.Now()
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) }})
	require.NoError(r.b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	require.True(r.b, toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced), "ConfigMap watch synced")
	return func() (int, time.Time) {
			mu.Lock()
			defer mu.Unlock()
			return len(seen), last
		}, func() {
			cancel()
			<-done
		}
}

// rollOut has every replica register the graph's generation 2, which the
// one-wave GraphRollout (every cluster in its one wave) takes to every
// cluster, and measures until every instance's ConfigMap records it and
// the rollout is complete at its new target.
func (r *scaleRun) rollOut(ctx context.Context) {
	for _, cmd := range r.procs {
		require.NoError(r.b, cmd.Process.Signal(syscall.SIGUSR2))
	}
	start := time.Now()
	all := r.names
	var complete, children time.Time
	done := waitFor(r.b, "the new revision on every cluster", time.Second, r.logState, func() (bool, string) {
		st := rolloutStatus(r.b, r.c, scaleGraph)
		if complete.IsZero() && st.Phase == fgv1alpha1.RolloutComplete && st.TargetRevision == 2 {
			complete = time.Now()
		}
		list := &corev1.ConfigMapList{}
		if err := r.c.List(ctx, list, client.MatchingLabels{contract.LabelManagedBy: contract.ManagedBy}); err != nil {
			return false, err.Error()
		}
		got := 0
		for _, cm := range list.Items {
			if cm.Data["generation"] == "2" {
				got++
			}
		}
		if got == len(all) && children.IsZero() {
			children = time.Now()
		}
		return !children.IsZero() && !complete.IsZero(), fmt.Sprintf("%d of %d ConfigMaps at generation 2; rollout %s at revision %d",
			got, len(all), st.Phase, st.TargetRevision)
	})
	r.b.ReportMetric(done.Sub(start).Seconds(), "s-rollout")
	r.b.ReportMetric(children.Sub(start).Seconds(), "s-rollout-children")
	fmt.Printf("scale     one-wave GraphRollout of generation 2 across %d clusters: every instance's child at generation 2 after %.1fs, "+
		"the rollout's status Complete after %.1fs (1s sampling)\n",
		len(all), children.Sub(start).Seconds(), complete.Sub(start).Seconds())
}

// reportDoubleServing reports the clusters that two replicas served at
// overlapping times, from the intervals each replica sampled (the killed
// one's last report, its open intervals ending at the kill).
func (r *scaleRun) reportDoubleServing() {
	now := time.Now().UnixNano()
	spans := map[string][][2]int64{} // cluster -> [from, to] per replica, tagged below
	owner := map[string][]string{}
	for _, id := range r.ids {
		rep, err := readScaleReport(r.dir, id)
		require.NoError(r.b, err, "report of %s", id)
		end := now
		if id == r.victim {
			end = r.killed.UnixNano()
		}
		for cl, ss := range rep.Spans {
			for _, s := range ss {
				to := s.To
				if to == 0 {
					to = end
				}
				spans[cl] = append(spans[cl], [2]int64{s.From, to})
				owner[cl] = append(owner[cl], id)
			}
		}
	}
	certain, within, moved := 0, 0, 0
	var longest time.Duration
	for cl, ss := range spans {
		if slices.ContainsFunc(owner[cl], func(id string) bool { return id != owner[cl][0] }) {
			moved++
		}
		overlap := time.Duration(0)
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				if owner[cl][i] == owner[cl][j] {
					continue
				}
				overlap = max(overlap, time.Duration(min(ss[i][1], ss[j][1])-max(ss[i][0], ss[j][0])))
			}
		}
		switch {
		case overlap > scaleSample:
			certain++
		case overlap > 0:
			within++
		}
		longest = max(longest, overlap)
	}
	r.b.ReportMetric(float64(certain), "clusters-double-served")
	fmt.Printf("scale     clusters served by two replicas at once: %d for longer than the %s sampling (longest %s), %d within it (target 0); "+
		"%d of %d clusters moved between replicas during the run\n",
		certain, scaleSample, longest.Round(time.Millisecond), within, moved, len(spans))
}
