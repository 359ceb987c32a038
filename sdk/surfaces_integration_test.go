//go:build integration

package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/hubgraph"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// TestEverySurfaceTellsTheSameTruth puts one fleet (a hub, four spokes)
// in every state a person meets, a graph in each: a rollout waiting for
// approval of its main wave, a held cluster, a canary cluster that failed
// within its wave's budget, an automatic rollback, an instance in ERROR,
// a hub graph with two target clusters and, at the end, its deletion
// waiting on a frozen target. In each state it checks that the four
// surfaces say the same thing and that it is true: the hub's FleetStatus,
// the RGD's status, the GraphRollout's status and `fleetgraph status -o
// json` (the built binary), against the instances and children listed on
// the spokes themselves. It does so on a lone hub, then on two hub
// replicas sharing the fleet (every cluster listed once, counts summed),
// while and after one of them is killed.
//
// A fleet of its own: it runs the RGD controller and GraphRollouts,
// freezes a spoke and runs replicas. Not parallel: it times how soon the
// counts follow a change and kills a replica, whose takeover is timed.
func TestEverySurfaceTellsTheSameTruth(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 4)
	canary, main := map[string]string{"ring": "canary"}, map[string]string{"ring": "main"}
	labels := map[string]map[string]string{"spoke-1": canary, "spoke-2": canary, "spoke-3": main, "spoke-4": main}
	w := newSurfaceWorld(t, fleet)
	refuseData(t, w.spokes["spoke-1"], "version", "back-2")
	refuseData(t, w.spokes["spoke-2"], "version", "fail-2")
	refuseData(t, w.spokes["spoke-3"], "color", "poison")

	lone, stopLone := startSurfaceHub(t, fleet.Hub.Config, newLabelledProvider(t, fleet, labels), surfaceOptions(""), nil)
	w.hubs = []*sdk.Hub{lone}
	w.setUp(t)

	t.Run("a lone hub", func(t *testing.T) { w.requireTruth(t, w.graphs) })
	t.Run("a lone hub: counts follow a change within a status write", func(t *testing.T) { w.requireCountsFollow(t) })
	t.Run("a lone hub: a hub graph's deletion waits on a frozen target", func(t *testing.T) { w.requireFrozenDeletion(t) })

	stopLone()
	sharding := sdk.ShardingOptions{LeaseDuration: 6 * time.Second, RenewInterval: 2 * time.Second, Probe: time.Second}
	replicas := map[string]func(){}
	w.hubs = nil
	for _, id := range []string{"r-0", "r-1"} {
		h, stop := startSurfaceHub(t, fleet.Hub.Config, newLabelledProvider(t, fleet, labels), surfaceOptions(id), &sharding)
		w.hubs, w.ids, replicas[id] = append(w.hubs, h), append(w.ids, id), stop
	}
	// Hub graphs under replicas are the engine's open question: every
	// replica reconciles the hub's instances but reaches only the targets
	// it engaged, so an instance writing to clusters of both replicas goes
	// to ERROR on each in turn. The surfaces must still agree on which
	// instances write where; their readiness is what the replica that
	// wrote last saw.
	t.Run("two replicas", func(t *testing.T) {
		w.requireShared(t)
		w.requireTruth(t, w.graphs)
		t.Logf("the hub graph's instance under two replicas: %s", state(w.hub, linkGVK, "web"))
	})
	// Killed from the test itself (the replicas are its own), then checked.
	w.killOne(t, replicas, sharding)
}

// surfaceOptions are the Hub options of the test: RGD controller on; a
// status resync far longer than the counts may take to follow (they are
// told, not polled); a quick prober; every target allowed.
func surfaceOptions(replica string) sdk.Options {
	o := sdk.Options{
		Targets: sdk.TargetOptions{
			Allow:       func(context.Context, *graph.Graph, *unstructured.Unstructured, string) error { return nil },
			CallTimeout: 2 * time.Second,
		},
		RGDs: sdk.RGDOptions{InstallCRD: true},
		Fleet: sdk.FleetOptions{
			StatusResync: 30 * time.Second,
			Probe:        sdk.ProberOptions{Interval: time.Second, Timeout: time.Second},
		},
		Rollouts: sdk.RolloutOptions{Resync: 250 * time.Millisecond},
	}
	if replica != "" {
		o.Replicas.ID, o.Fleet.DepartureGrace, o.Fleet.StatusResync = replica, -1, 2*time.Second
	}
	return o
}

// startSurfaceHub runs a Hub in a manager of its own, as one of several
// replicas when sharding is set, until the returned stop.
func startSurfaceHub(t *testing.T, cfg *rest.Config, provider *labelledProvider, opts sdk.Options, sharding *sdk.ShardingOptions) (*sdk.Hub, func()) {
	t.Helper()
	var mcOpts []mcmanager.Option
	if sharding != nil {
		s := *sharding
		s.ID = opts.Replicas.ID
		leases, err := client.New(cfg, client.Options{})
		require.NoError(t, err)
		mcOpts = append(mcOpts, mcmanager.WithCoordinator(sdk.NewShardedCoordinator(leases, s)))
	}
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// A replica killed here stops as a crash would, not as fast as it
		// can: its shutdown is not this test's subject, on a loaded machine.
		GracefulShutdownTimeout: ptr.To(2 * time.Minute),
	}, mcOpts...)
	require.NoError(t, err)
	h, err := sdk.NewHub(provider, opts)
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	return h, fgtesting.StartStoppable(t, mgr.Start)
}

// cell is what a cluster of a graph should show: the revision it should
// serve and why it is not the latest ("" when it is).
type cell struct {
	desired int64
	reason  hub.Reason
}

// surfaceGraph is one graph of the test, served on the spokes.
type surfaceGraph struct {
	name, kind string
	// rollout is its GraphRollout's spec (nil: none).
	rollout map[string]any
	// want is, once revision 2 is applied, each spoke's cell.
	want map[string]cell
	// phase is its rollout's phase once revision 2 is applied.
	phase string
}

func (g surfaceGraph) gvk() schema.GroupVersionKind { return webAppGVK.GroupVersion().WithKind(g.kind) }

// surfaceWorld is the fleet, its clients and the graphs of the test.
type surfaceWorld struct {
	fleet  *fgtesting.Fleet
	hub    client.Client
	spokes map[string]client.Client
	graphs []surfaceGraph
	// links is how many instances the hub graph has.
	links int
	// hubs are the live Hubs (one, or the replicas), ids the replicas'.
	hubs []*sdk.Hub
	ids  []string
	cli  surfaceCLI
}

func newSurfaceWorld(t *testing.T, fleet *fgtesting.Fleet) *surfaceWorld {
	waves := func(extra map[string]any, main map[string]any) map[string]any {
		spec := map[string]any{
			"waves": []any{
				map[string]any{"name": "canary", "clusterSelector": map[string]any{"matchLabels": map[string]any{"ring": "canary"}}},
				main,
			},
			"progressDeadlineSeconds": int64(4),
		}
		maps.Copy(spec, extra)
		return spec
	}
	mainWave := map[string]any{"name": "main", "clusterSelector": map[string]any{"matchLabels": map[string]any{"ring": "main"}}}
	awaitingMain := maps.Clone(mainWave)
	awaitingMain["approval"] = fgv1alpha1.ApprovalRequired
	failSpec := waves(nil, mainWave)
	failSpec["waves"].([]any)[0].(map[string]any)["maxFailures"] = int64(1)
	all := func(rev int64) map[string]cell {
		return map[string]cell{"spoke-1": {rev, ""}, "spoke-2": {rev, ""}, "spoke-3": {rev, ""}, "spoke-4": {rev, ""}}
	}
	with := func(m map[string]cell, changes map[string]cell) map[string]cell {
		out := maps.Clone(m)
		maps.Copy(out, changes)
		return out
	}
	return &surfaceWorld{
		fleet: fleet, hub: newClient(t, fleet.Hub.Config), spokes: clientsOf(t, fleet), cli: newSurfaceCLI(t, fleet),
		graphs: []surfaceGraph{
			{name: "roll", kind: "Roll", rollout: waves(nil, awaitingMain), phase: fgv1alpha1.RolloutProgressing,
				want: with(all(2), map[string]cell{"spoke-3": {1, hub.ReasonRollingOut}, "spoke-4": {1, hub.ReasonRollingOut}})},
			{name: "hold", kind: "Hold", phase: fgv1alpha1.RolloutComplete,
				rollout: map[string]any{"holds": []any{map[string]any{"clusters": []any{"spoke-2"}, "reason": "customer freeze"}}},
				want:    with(all(2), map[string]cell{"spoke-2": {1, hub.ReasonHeld}})},
			{name: "fail", kind: "Fail", rollout: failSpec, phase: fgv1alpha1.RolloutComplete,
				want: with(all(2), map[string]cell{"spoke-2": {1, hub.ReasonFailed}})},
			{name: "back", kind: "Back", rollout: waves(map[string]any{"onFailure": fgv1alpha1.OnFailureRollback}, mainWave), phase: fgv1alpha1.RolloutRolledBack,
				want: map[string]cell{"spoke-1": {1, hub.ReasonRolledBack}, "spoke-2": {1, hub.ReasonRolledBack}, "spoke-3": {1, hub.ReasonRolledBack}, "spoke-4": {1, hub.ReasonRolledBack}}},
			{name: "plain", kind: "Plain", want: all(2)},
		},
	}
}

// setUp serves revision 1 of every graph with an ACTIVE instance named
// after the graph on every spoke (and one in ERROR on spoke-3, for
// "plain"), the hub
// graph "link" with an instance writing to spoke-1 and spoke-2, then
// applies revision 2 of every spoke graph and waits for each rollout's
// end state.
func (w *surfaceWorld) setUp(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, g := range w.graphs {
		if g.rollout != nil {
			spec := maps.Clone(g.rollout)
			spec["graph"] = g.name
			applyRollout(t, w.fleet.Hub.Config, g.name, spec)
		}
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NoError(ct, client.IgnoreAlreadyExists(w.hub.Create(ctx, tideRGD(t, g.name, g.kind, g.name+"-1", ""))))
		}, wait, tick, "applying RGD %s (the hub installs the RGD CRD)", g.name)
	}
	require.NoError(t, w.hub.Create(ctx, rgdFromString(t, linkRGD)))
	for _, g := range w.graphs {
		for _, c := range w.spokes {
			createWhenServed(t, c, instance(g.gvk(), g.name, map[string]any{"color": "green"}))
		}
	}
	createWhenServed(t, w.spokes["spoke-3"], instance(webAppGVK.GroupVersion().WithKind("Plain"), "plain-bad", map[string]any{"color": "poison"}))
	createWhenServed(t, w.hub, instance(linkGVK, "web", map[string]any{"egressCluster": "spoke-2"}))
	for _, g := range w.graphs {
		for _, c := range w.spokes {
			requireState(t, c, g.gvk(), g.name, "ACTIVE")
		}
	}
	requireState(t, w.spokes["spoke-3"], webAppGVK.GroupVersion().WithKind("Plain"), "plain-bad", "ERROR")
	requireState(t, w.hub, linkGVK, "web", "ACTIVE")
	w.links = 1
	for _, g := range w.graphs {
		if g.rollout != nil {
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				st := rolloutStatus(ct, w.hub, g.name)
				assert.Equal(ct, [2]any{fgv1alpha1.RolloutComplete, int64(1)}, [2]any{st.Phase, st.TargetRevision}, st.Message)
			}, wait, tick, "rollout %s takes revision 1 as rolled out", g.name)
		}
	}
	for _, g := range w.graphs {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			rgd := &v1alpha1.ResourceGraphDefinition{}
			require.NoError(ct, w.hub.Get(ctx, client.ObjectKey{Name: g.name}, rgd))
			rgd.Spec = tideRGD(t, g.name, g.kind, g.name+"-2", "").Spec
			assert.NoError(ct, w.hub.Update(ctx, rgd))
		}, wait, tick, "revision 2 of %s", g.name)
		if g.name == "hold" {
			w.requireWatchWaitsForTheNewRevision(t, g.name)
		}
	}
	for _, g := range w.graphs {
		if g.rollout == nil {
			continue
		}
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			st := rolloutStatus(ct, w.hub, g.name)
			assert.Equal(ct, [2]any{g.phase, int64(2)}, [2]any{st.Phase, st.TargetRevision}, st.Message)
			if g.name == "roll" {
				assert.Equal(ct, "main", st.AwaitingApproval)
			}
		}, wait, tick, "rollout %s reaches %s", g.name, g.phase)
	}
}

// requireWatchWaitsForTheNewRevision runs `fleetgraph rollout status
// --watch` right after an RGD's update, as CI does after `kubectl apply`:
// it must not end on the previous revision's Complete, but with the
// rollout of the revision issued for the RGD's new spec.
func (w *surfaceWorld) requireWatchWaitsForTheNewRevision(t *testing.T, graphName string) {
	t.Helper()
	out, err := exec.Command(w.cli.bin, "--kubeconfig", w.cli.kubeconfig, "rollout", "status", graphName,
		"--watch", "--interval", "100ms", "--timeout", "2m").CombinedOutput()
	require.NoError(t, err, "%s", out)
	st := rolloutStatus(t, w.hub, graphName)
	assert.Equal(t, [2]any{fgv1alpha1.RolloutComplete, int64(2)}, [2]any{st.Phase, st.TargetRevision},
		"--watch ended with the rollout of revision 2, not revision 1's: %s", out)
	assert.Regexp(t, `(?m)^--- \d\d:\d\d:\d\d$`, string(out), "each change under the time it was read")
}

// truth is a graph on one spoke as listed there: its instances, how many
// are ACTIVE and in ERROR, and the revision that wrote the child of its
// instance named after the graph (its data.version, "<graph>-<revision>").
type truth struct {
	instances, ready, errors int
	revision                 int64
}

func (w *surfaceWorld) truthOf(ct require.TestingT, g surfaceGraph, spoke string) truth {
	ctx := context.Background()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(g.gvk().GroupVersion().WithKind(g.kind + "List"))
	require.NoError(ct, w.spokes[spoke].List(ctx, list))
	var out truth
	for _, u := range list.Items {
		out.instances++
		switch s, _, _ := unstructured.NestedString(u.Object, "status", "state"); s {
		case contract.StateActive:
			out.ready++
		case contract.StateError:
			out.errors++
		}
	}
	cm := &corev1.ConfigMap{}
	require.NoError(ct, w.spokes[spoke].Get(ctx, client.ObjectKey{Namespace: "default", Name: g.name + "-tide"}, cm))
	rev, err := strconv.ParseInt(strings.TrimPrefix(cm.Data["version"], g.name+"-"), 10, 64)
	require.NoError(ct, err, "version %q", cm.Data["version"])
	out.revision = rev
	return out
}

// fleetStatus is the graph's FleetStatus over the live Hubs: each cluster
// must be listed by exactly one of them.
func (w *surfaceWorld) fleetStatus(ct require.TestingT, graphName string) map[string]sdk.ClusterStatus {
	out := map[string]sdk.ClusterStatus{}
	for _, h := range w.hubs {
		for _, c := range h.FleetStatus(graphName).Clusters {
			_, twice := out[c.Cluster]
			require.False(ct, twice, "cluster %s in the FleetStatus of two replicas", c.Cluster)
			out[c.Cluster] = c
		}
	}
	return out
}

// requireTruth waits until every graph's four surfaces agree with each
// other and with the spokes.
func (w *surfaceWorld) requireTruth(t *testing.T, graphs []surfaceGraph) {
	t.Helper()
	for _, g := range graphs {
		t.Run(g.name, func(t *testing.T) {
			require.EventuallyWithT(t, func(ct *assert.CollectT) { w.checkGraph(ct, g) }, wait, 250*time.Millisecond)
		})
	}
	t.Run("link (hub graph)", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) { w.checkHubGraph(ct, w.links, 0) }, wait, 250*time.Millisecond)
	})
}

// checkGraph compares one spoke graph's surfaces with the spokes.
func (w *surfaceWorld) checkGraph(ct *assert.CollectT, g surfaceGraph) {
	fs := w.fleetStatus(ct, g.name)
	require.ElementsMatch(ct, slices.Collect(maps.Keys(w.spokes)), slices.Collect(maps.Keys(fs)), "FleetStatus lists every spoke once")
	var sum truth
	for name := range w.spokes {
		c, real := fs[name], w.truthOf(ct, g, name)
		sum.instances, sum.ready, sum.errors = sum.instances+real.instances, sum.ready+real.ready, sum.errors+real.errors
		assert.Equal(ct, [4]any{real.instances, real.ready, real.errors, real.revision},
			[4]any{c.Instances, c.ReadyInstances, c.ErrorInstances, c.ServedRevision}, "%s on %s: FleetStatus against the spoke", g.name, name)
		assert.True(ct, c.Serving, "%s serves %s", name, g.name)
		want := g.want[name]
		assert.Equal(ct, [2]any{want.desired, want.reason}, [2]any{c.DesiredRevision, c.Reason}, "%s on %s: %s", g.name, name, c.Why)
		assert.True(ct, c.Healthy(), "%s on %s is healthy: %s", g.name, name, c.Why)
	}
	w.checkRGD(ct, g, fs, sum)
	w.checkRollout(ct, g, fs)
	w.checkCLI(ct, g.name, fs)
}

// checkRGD compares the RGD's status with the clusters' and the spokes'
// sums.
func (w *surfaceWorld) checkRGD(ct *assert.CollectT, g surfaceGraph, fs map[string]sdk.ClusterStatus, sum truth) {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(ct, w.hub.Get(context.Background(), client.ObjectKey{Name: g.name}, rgd))
	f := rgd.Status.Fleet
	require.NotNil(ct, f)
	assert.Equal(ct, [4]int64{int64(len(fs)), int64(sum.instances), int64(sum.ready), int64(sum.errors)},
		[4]int64{int64(f.Clusters), f.Instances, f.ReadyInstances, f.ErrorInstances}, "%s: the RGD counts every cluster once and the spokes' instances", g.name)
	assert.Equal(ct, int64(2), f.LatestRevision)
	assert.Zero(ct, f.Unhealthy, "%s: %s", g.name, f.Message)
	listed := map[string]v1alpha1.ClusterHealth{}
	for _, h := range f.NotLatestClusters {
		listed[h.Name] = h
	}
	served := map[int64]int32{}
	for name, c := range fs {
		served[c.ServedRevision]++
		h, ok := listed[name]
		assert.Equal(ct, c.Reason != "", ok, "%s on %s: listed as not on the latest revision exactly when it has a reason", g.name, name)
		if ok {
			assert.Equal(ct, [4]any{string(c.Reason), c.ServedRevision, c.DesiredRevision, c.Why}, [4]any{h.Reason, h.ServedRevision, h.DesiredRevision, h.Message}, "%s on %s", g.name, name)
		}
	}
	got := map[int64]int32{}
	for _, r := range f.Revisions {
		got[r.Revision] = r.Clusters
	}
	assert.Equal(ct, served, got, "%s: the revisions served", g.name)
	kind := conditionOf(rgd.Status.Conditions, v1alpha1.ConditionKindReady)
	require.NotNil(ct, kind)
	assert.Equal(ct, metav1.ConditionTrue, kind.Status, kind.Message)
	assert.NotContains(ct, kind.Message, "cannot be served")
	if g.name == "back" {
		assert.Regexp(ct, `^serving revision 1 \(revision 2 rolled back: wave "canary" not healthy within 4s: spoke-1: `, f.Message)
		assert.Contains(ct, kind.Message, f.Message)
	}
}

func conditionOf(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// checkRollout compares the GraphRollout's status with the clusters'.
func (w *surfaceWorld) checkRollout(ct *assert.CollectT, g surfaceGraph, fs map[string]sdk.ClusterStatus) {
	if g.rollout == nil {
		return
	}
	st := rolloutStatus(ct, w.hub, g.name)
	seen := map[string]bool{}
	for _, rc := range st.Clusters {
		assert.False(ct, seen[rc.Name], "%s: %s listed twice", g.name, rc.Name)
		seen[rc.Name] = true
		c := fs[rc.Name]
		assert.Equal(ct, [2]int64{c.ServedRevision, c.DesiredRevision}, [2]int64{rc.Revision, rc.Desired}, "%s on %s: the rollout against the fleet status", g.name, rc.Name)
		assert.Equal(ct, c.Reason == hub.ReasonHeld, rc.Held, "%s on %s held", g.name, rc.Name)
		assert.Equal(ct, c.Reason == hub.ReasonFailed, rc.FailedRevision == 2, "%s on %s failed", g.name, rc.Name)
	}
	assert.Len(ct, seen, len(fs), "%s: the rollout lists every cluster", g.name)
	if g.name == "fail" {
		require.Len(ct, st.Failed, 1)
		assert.Equal(ct, "spoke-2", st.Failed[0].Name)
		assert.NotContains(ct, st.Message, "healthy,")
	}
}

// checkCLI compares `fleetgraph status -o json` with the clusters'.
func (w *surfaceWorld) checkCLI(ct *assert.CollectT, graphName string, fs map[string]sdk.ClusterStatus) {
	g := w.cli.graph(ct, graphName)
	require.Len(ct, g.Clusters, len(fs), "%s: the CLI lists every cluster once", graphName)
	for _, c := range g.Clusters {
		want, ok := fs[c.Name]
		require.True(ct, ok, c.Name)
		assert.Equal(ct, [6]any{want.ServedRevision, want.DesiredRevision, int64(want.Instances), int64(want.ReadyInstances), int64(want.ErrorInstances), string(want.Reason)},
			[6]any{deref(c.ServedRevision), deref(c.DesiredRevision), deref(c.Instances), deref(c.ReadyInstances), deref(c.ErrorInstances), c.Reason},
			"%s on %s: the CLI against the fleet status", graphName, c.Name)
	}
}

func deref(n *int64) int64 {
	if n == nil {
		return -1
	}
	return *n
}

// checkHubGraph compares the hub graph's surfaces with what is on the
// hub and the targets: instances of the hub graph, of which deleting are
// being deleted.
func (w *surfaceWorld) checkHubGraph(ct *assert.CollectT, instances, deleting int) {
	ctx := context.Background()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(linkGVK.GroupVersion().WithKind("LinkList"))
	require.NoError(ct, w.hub.List(ctx, list))
	require.Len(ct, list.Items, instances, "instances on the hub")
	// With replicas, each replica serves the hub graph but reaches only
	// the targets it engaged (see the note on the replicas' subtest): they
	// agree on which instances write where, not on their readiness.
	var fs sdk.GraphStatus
	for i, h := range w.hubs {
		st := h.FleetStatus("link")
		if i == 0 {
			fs = st
			continue
		}
		assert.Equal(ct, targetUse(fs.Targets), targetUse(st.Targets), "every replica counts the hub's instances alike")
	}
	assert.Equal(ct, instances, fs.Instances)
	byName := map[string]sdk.TargetStatus{}
	for _, ts := range fs.Targets {
		byName[ts.Cluster] = ts
	}
	for _, target := range []string{"spoke-1", "spoke-2"} {
		children := &corev1.ConfigMapList{}
		require.NoError(ct, w.spokes[target].List(ctx, children, client.HasLabels{hubgraph.LabelHub, contract.LabelInstanceUID}))
		owners := map[string]bool{}
		for _, cm := range children.Items {
			owners[cm.Labels[contract.LabelInstanceUID]] = true
		}
		ts := byName[target]
		assert.Equal(ct, len(owners), ts.Instances, "instances with children on %s", target)
		assert.Equal(ct, deleting, ts.Deleting, "deletions waiting on %s", target)
	}
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(ct, w.hub.Get(ctx, client.ObjectKey{Name: "link"}, rgd))
	require.NotNil(ct, rgd.Status.Fleet)
	assert.Equal(ct, int64(instances), rgd.Status.Fleet.Instances)
	assert.Equal(ct, int32(len(fs.Targets)), rgd.Status.Fleet.TargetClusters)
	require.Len(ct, rgd.Status.Fleet.Targets, len(fs.Targets), "the RGD's status lists every target the hub counts")
	cli := w.cli.graph(ct, "link")
	require.Len(ct, cli.Targets, len(fs.Targets))
	for i, ts := range fs.Targets {
		rt, lt := rgd.Status.Fleet.Targets[i], cli.Targets[i]
		want := [4]any{ts.Cluster, int32(ts.Instances), int32(ts.Deleting), ts.Unreachable != ""}
		assert.Equal(ct, want, [4]any{rt.Name, rt.Instances, rt.Deleting, rt.Unreachable != ""}, "the RGD's target %s", ts.Cluster)
		assert.Equal(ct, want, [4]any{lt.Name, lt.Instances, lt.Deleting, lt.Unreachable != ""}, "the CLI's target %s", ts.Cluster)
		if len(w.hubs) == 1 {
			assert.Equal(ct, [2]int32{int32(ts.ReadyInstances), int32(ts.ReadyInstances)}, [2]int32{rt.ReadyInstances, lt.ReadyInstances}, "ready on %s", ts.Cluster)
		}
	}
}

// targetUse is which instances write where, without readiness.
func targetUse(ts []sdk.TargetStatus) map[string][2]int {
	out := map[string][2]int{}
	for _, t := range ts {
		out[t.Cluster] = [2]int{t.Instances, t.Deleting}
	}
	return out
}

// requireCountsFollow creates three instances and waits for the RGD's
// status to count them: it must, well before the status resync (30 s),
// since every change of the counts is told. It deletes them after.
func (w *surfaceWorld) requireCountsFollow(t *testing.T) {
	ctx := context.Background()
	gvk := webAppGVK.GroupVersion().WithKind("Plain")
	c := w.spokes["spoke-4"]
	before := w.rgdInstances(t, "plain")
	start := time.Now()
	for i := range 3 {
		require.NoError(t, c.Create(ctx, instance(gvk, fmt.Sprintf("plain-more-%d", i), map[string]any{"color": "green"})))
	}
	require.Eventually(t, func() bool { return w.rgdInstances(t, "plain") == before+3 }, 10*time.Second, 20*time.Millisecond,
		"the RGD counts the new instances long before its 30 s resync")
	t.Logf("the RGD's status counted 3 new instances %s after their creation (status resync 30 s)", time.Since(start).Round(10*time.Millisecond))
	for i := range 3 {
		require.NoError(t, c.Delete(ctx, instance(gvk, fmt.Sprintf("plain-more-%d", i), nil)))
	}
	require.Eventually(t, func() bool { return w.rgdInstances(t, "plain") == before }, 10*time.Second, 20*time.Millisecond)
}

func (w *surfaceWorld) rgdInstances(t *testing.T, name string) int64 {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, w.hub.Get(context.Background(), client.ObjectKey{Name: name}, rgd))
	if rgd.Status.Fleet == nil {
		return -1
	}
	return rgd.Status.Fleet.Instances
}

// requireFrozenDeletion freezes spoke-2 and deletes the hub graph's
// instance, which writes there: its deletion waits, every surface says
// so, and every spoke graph says spoke-2 is unreachable; then spoke-2
// comes back, the deletion ends, and the instance is made again.
func (w *surfaceWorld) requireFrozenDeletion(t *testing.T) {
	ctx := context.Background()
	frozen := w.fleet.Spoke("spoke-2")
	require.NoError(t, frozen.Pause())
	resumed := false
	defer func() {
		if !resumed {
			_ = frozen.Resume()
		}
	}()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		for _, ts := range w.hubs[0].FleetStatus("link").Targets {
			if ts.Cluster == "spoke-2" {
				assert.NotEmpty(ct, ts.Unreachable)
			}
		}
	}, wait, tick, "the hub finds spoke-2 unreachable")
	require.NoError(t, w.hub.Delete(ctx, instance(linkGVK, "web", nil)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		fs := w.hubs[0].FleetStatus("link")
		byName := map[string]sdk.TargetStatus{}
		for _, ts := range fs.Targets {
			byName[ts.Cluster] = ts
		}
		assert.Equal(ct, 1, byName["spoke-2"].Deleting)
		assert.NotEmpty(ct, byName["spoke-2"].Unreachable)
		rgd := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, w.hub.Get(ctx, client.ObjectKey{Name: "link"}, rgd))
		require.NotNil(ct, rgd.Status.Fleet)
		var rt v1alpha1.TargetHealth
		for _, t := range rgd.Status.Fleet.Targets {
			if t.Name == "spoke-2" {
				rt = t
			}
		}
		assert.Equal(ct, [2]any{int32(1), true}, [2]any{rt.Deleting, rt.Unreachable != ""}, "the RGD's target spoke-2")
		cli := w.cli.graph(ct, "link")
		var lt surfaceTarget
		for _, t := range cli.Targets {
			if t.Name == "spoke-2" {
				lt = t
			}
		}
		assert.Equal(ct, [2]any{int32(1), true}, [2]any{lt.Deleting, lt.Unreachable != ""}, "the CLI's target spoke-2")
		for _, g := range w.graphs {
			c := w.fleetStatus(ct, g.name)["spoke-2"]
			assert.Equal(ct, hub.ReasonUnreachable, c.Reason, "%s on spoke-2", g.name)
			assert.Equal(ct, string(hub.ReasonUnreachable), w.cli.cluster(ct, g.name, "spoke-2").Reason, "the CLI: %s on spoke-2", g.name)
		}
	}, wait, 250*time.Millisecond, "the deletion waits on spoke-2, and every surface says so")
	t.Run("the instance says DELETING and not Ready (the engine's fix)", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Equal(ct, contract.StateDeleting, state(w.hub, linkGVK, "web"))
		}, 10*time.Second, tick)
	})
	require.NoError(t, frozen.Resume())
	resumed = true
	require.EventuallyWithT(t, func(ct *assert.CollectT) { w.checkHubGraph(ct, 0, 0) }, wait, 250*time.Millisecond, "the deletion ends with spoke-2 back")
	createWhenServed(t, w.hub, instance(linkGVK, "web", map[string]any{"egressCluster": "spoke-2"}))
	requireState(t, w.hub, linkGVK, "web", "ACTIVE")
	w.requireTruth(t, w.graphs)
}

// requireShared waits until each spoke is served by exactly one replica.
func (w *surfaceWorld) requireShared(t *testing.T) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		owners := map[string][]int{}
		for i, h := range w.hubs {
			for _, c := range h.Clusters() {
				owners[c] = append(owners[c], i)
			}
		}
		for name := range w.spokes {
			assert.Len(ct, owners[name], 1, "%s served by replicas %v", name, owners[name])
		}
		for _, h := range w.hubs {
			assert.NotEmpty(ct, h.Clusters(), "every replica serves some spoke")
		}
	}, wait, tick)
}

// killOne kills the replica that serves the most spokes, as a crash
// would (its peer Lease left live, renewed a moment before), and checks
// throughout that every surface lists every cluster once with the counts
// summed; a cluster of the killed replica is shown as such, if at all,
// until the other takes it; after, every surface tells the truth again.
func (w *surfaceWorld) killOne(t *testing.T, stops map[string]func(), sharding sdk.ShardingOptions) {
	victim := 0
	for i, h := range w.hubs {
		if len(h.Clusters()) > len(w.hubs[victim].Clusters()) {
			victim = i
		}
	}
	orphaned, id := w.hubs[victim].Clusters(), w.ids[victim]
	survivor := w.hubs[1-victim]
	sums := map[string]truth{}
	for _, g := range w.graphs {
		var sum truth
		for name := range w.spokes {
			real := w.truthOf(t, g, name)
			sum.instances += real.instances
		}
		sums[g.name] = sum
	}
	seen := &goneSeen{}
	stopWatch := sampleEvery(100*time.Millisecond, func() { w.checkDuringKill(t, sums, orphaned, id, seen) })
	defer stopWatch()

	t.Logf("killing %s, which serves %v", id, orphaned)
	start := time.Now()
	stops[id]()
	crashLease(t, w.hub, id, sharding)
	w.hubs = []*sdk.Hub{survivor}
	w.ids = []string{w.ids[1-victim]}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.ElementsMatch(ct, slices.Collect(maps.Keys(w.spokes)), survivor.Clusters())
	}, sharding.TakeoverBound()+wait, tick, "the survivor takes every spoke")
	t.Logf("the survivor serves every spoke %s after the kill; clusters of %s seen as ReplicaGone in: %s",
		time.Since(start).Round(100*time.Millisecond), id, seen.String())
	stopWatch()
	t.Run("two replicas, one killed", func(t *testing.T) { w.requireTruth(t, w.graphs) })
}

// goneSeen records where the killed replica's clusters were seen marked
// ReplicaGone.
type goneSeen struct {
	mu    sync.Mutex
	where map[string]bool
}

func (g *goneSeen) saw(where string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.where == nil {
		g.where = map[string]bool{}
	}
	g.where[where] = true
}

func (g *goneSeen) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.where) == 0 {
		return "none (taken over between two status writes)"
	}
	return strings.Join(slices.Sorted(maps.Keys(g.where)), ", ")
}

// checkDuringKill is one sample while a replica is killed: the RGD and
// the GraphRollout list every cluster once, the RGD's counts are the
// spokes' (no instance changes meanwhile), and only the killed replica's
// clusters may be ReplicaGone.
func (w *surfaceWorld) checkDuringKill(t *testing.T, sums map[string]truth, orphaned []string, id string, seen *goneSeen) {
	ctx := context.Background()
	for _, g := range w.graphs {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		if err := w.hub.Get(ctx, client.ObjectKey{Name: g.name}, rgd); err != nil || rgd.Status.Fleet == nil {
			continue
		}
		f := rgd.Status.Fleet
		assert.Equal(t, int32(len(w.spokes)), f.Clusters, "%s: the RGD lists every cluster once while %s is killed", g.name, id)
		assert.Equal(t, int64(sums[g.name].instances), f.Instances, "%s: the RGD counts every spoke's instances while %s is killed", g.name, id)
		for _, h := range f.UnhealthyClusters {
			if h.Reason == string(hub.ReasonReplicaGone) {
				assert.Contains(t, orphaned, h.Name, "%s: only %s's clusters are ReplicaGone", g.name, id)
				seen.saw("the RGD")
			}
		}
		if g.rollout == nil {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
		if err := w.hub.Get(ctx, client.ObjectKey{Name: g.name}, u); err != nil {
			continue
		}
		clusters, _, _ := unstructured.NestedSlice(u.Object, "status", "clusters")
		names := map[string]bool{}
		for _, c := range clusters {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			assert.False(t, names[name], "%s: the rollout lists %s twice", g.name, name)
			names[name] = true
			if msg, _ := m["message"].(string); strings.Contains(msg, "stopped; no other replica has taken it over") {
				seen.saw("the GraphRollout")
			}
		}
		assert.Len(t, names, len(w.spokes), "%s: the rollout lists every cluster while %s is killed", g.name, id)
	}
}

// crashLease makes the stopped replica's peer Lease look as a crashed
// replica's does: renewed a moment ago, so that the others find it dead
// only once it expires (a replica that stops cleanly expires it at once).
func crashLease(t *testing.T, c client.Client, id string, sharding sdk.ShardingOptions) {
	t.Helper()
	ctx := context.Background()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		lease := &coordv1.Lease{}
		require.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "mcr-peer-" + id}, lease))
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(sharding.LeaseDuration / time.Second))
		require.NoError(ct, c.Update(ctx, lease))
	}, wait, tick, "the peer Lease of %s, as a crash leaves it", id)
}

// surfaceCLI runs the fleetgraph binary, built once, against the hub.
type surfaceCLI struct {
	bin, kubeconfig string
}

// surfaceFleet is what the test reads of `fleetgraph status -o json`.
type surfaceFleet struct {
	Graphs []surfaceGraphView `json:"graphs"`
}

type surfaceGraphView struct {
	Name     string           `json:"name"`
	Clusters []surfaceCluster `json:"clusters"`
	Targets  []surfaceTarget  `json:"targets"`
}

type surfaceCluster struct {
	Name            string `json:"name"`
	ServedRevision  *int64 `json:"servedRevision"`
	DesiredRevision *int64 `json:"desiredRevision"`
	Instances       *int64 `json:"instances"`
	ReadyInstances  *int64 `json:"readyInstances"`
	ErrorInstances  *int64 `json:"errorInstances"`
	Reason          string `json:"reason"`
}

type surfaceTarget struct {
	Name           string `json:"name"`
	Instances      int32  `json:"instances"`
	ReadyInstances int32  `json:"readyInstances"`
	Deleting       int32  `json:"deleting"`
	Unreachable    string `json:"unreachable"`
}

func newSurfaceCLI(t *testing.T, fleet *fgtesting.Fleet) surfaceCLI {
	t.Helper()
	dir := t.TempDir()
	out := surfaceCLI{bin: filepath.Join(dir, "fleetgraph"), kubeconfig: filepath.Join(dir, "hub.kubeconfig")}
	build := exec.Command("go", "build", "-o", out.bin, "../cmd/fleetgraph")
	msg, err := build.CombinedOutput()
	require.NoError(t, err, "building fleetgraph: %s", msg)
	require.NoError(t, os.WriteFile(out.kubeconfig, fleet.Hub.Kubeconfig, 0o600))
	return out
}

// graph is the named graph as `fleetgraph status -o json` shows it.
func (c surfaceCLI) graph(ct require.TestingT, name string) surfaceGraphView {
	out, err := exec.Command(c.bin, "--kubeconfig", c.kubeconfig, "status", name, "-o", "json").Output()
	require.NoError(ct, err, "fleetgraph status %s: %s", name, out)
	f := &surfaceFleet{}
	require.NoError(ct, json.Unmarshal(out, f))
	require.Len(ct, f.Graphs, 1)
	return f.Graphs[0]
}

// cluster is one cluster of the named graph as the CLI shows it.
func (c surfaceCLI) cluster(ct require.TestingT, graphName, cluster string) surfaceCluster {
	for _, cl := range c.graph(ct, graphName).Clusters {
		if cl.Name == cluster {
			return cl
		}
	}
	assert.Fail(ct, "the CLI does not list the cluster", "%s on %s", graphName, cluster)
	return surfaceCluster{}
}
