//go:build integration

package sdk_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/rgd"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// repairWithin is how soon what the hub installed on a spoke is back
// after someone deleted it there (issue 42).
const repairWithin = 10 * time.Second

// A graph's CRD deleted by hand on a spoke (which takes the instances
// there with it) is back within seconds. While it is away, the hub's
// status shows that cluster not established and counts no ready
// instance there, and the RGD's summary is unhealthy (its Ready
// condition False); once it is back, new instances there become ACTIVE,
// and the other spoke never lost anything.
func TestACRDDeletedOnASpokeIsBackAndItsGapShown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := sharedFleet(t)
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	graphRGD, gvk := renamedRGD(readRGD(t, "testdata/webapp-rgd.yaml"), "repaired", "RepairedWebApp")
	require.NoError(t, h.RegisterGraph(ctx, graphRGD))
	c1, c2 := newClient(t, fleet.Spoke("spoke-1").Config), newClient(t, fleet.Spoke("spoke-2").Config)
	for _, c := range []client.Client{c1, c2} {
		for _, name := range []string{"repaired-a", "repaired-b"} {
			createWhenServed(t, c, instance(gvk, name, map[string]any{"name": name}))
			requireState(t, c, gvk, name, "ACTIVE")
		}
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"spoke-1": "Established 2/2", "spoke-2": "Established 2/2"},
			clusterStates(h, graphRGD.Name))
	}, wait, tick)
	uid1 := crdUIDOf(t, c1, crdName(gvk))

	watch := watchStatus(t, h, graphRGD.Name, "spoke-1")
	require.NoError(t, c1.Delete(ctx, crdNamed(crdName(gvk))))
	require.Eventually(t, func() bool {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		return c1.Get(ctx, client.ObjectKey{Name: crdName(gvk)}, crd) == nil && crd.UID != uid1 && isEstablished(crd)
	}, repairWithin, 50*time.Millisecond, "the CRD is back on spoke-1")

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"spoke-1": "Established 0/0", "spoke-2": "Established 2/2"},
			clusterStates(h, graphRGD.Name), "the instances the deletion took are not counted")
	}, wait, tick)
	gap := watch.stop()
	assert.True(t, gap.missing, "the status showed spoke-1's CRD Missing while it was away")
	assert.True(t, gap.unhealthy, "the RGD's summary was unhealthy while the CRD was away")
	assert.False(t, gap.claimedAfterLoss, "no ready instance was counted on spoke-1 once its CRD was seen missing")
	createWhenServed(t, c1, instance(gvk, "repaired-c", map[string]any{"name": "repaired-c"}))
	requireState(t, c1, gvk, "repaired-c", "ACTIVE")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, "Established 1/1", clusterStates(h, graphRGD.Name)["spoke-1"])
	}, wait, tick)
	for _, name := range []string{"repaired-a", "repaired-b"} {
		assert.Equal(t, "ACTIVE", state(c2, gvk, name), "spoke-2's instances are untouched")
	}
}

// The admission policy and its binding, deleted by hand on a spoke, are
// back within seconds, and instances created there afterwards are
// stamped by the policy and become ACTIVE. (The policy's absence is no
// gap in the graph's status: the runtime stamps new instances itself
// meanwhile, so the cluster serves the graph all along.)
func TestAnAdmissionPolicyDeletedOnASpokeIsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := sharedFleet(t)
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	graphRGD, gvk := renamedRGD(readRGD(t, "testdata/webapp-rgd.yaml"), "repolicied", "RepoliciedWebApp")
	require.NoError(t, h.RegisterGraph(ctx, graphRGD))
	c1 := newClient(t, fleet.Spoke("spoke-1").Config)
	createWhenServed(t, c1, instance(gvk, "repolicied-a", map[string]any{"name": "repolicied-a"}))
	requireState(t, c1, gvk, "repolicied-a", "ACTIVE")
	name := "fleetgraph." + crdName(gvk) // contract.AdmissionPolicyName
	requireStamped(t, c1, gvk)

	for _, obj := range []client.Object{&admissionv1.MutatingAdmissionPolicy{}, &admissionv1.MutatingAdmissionPolicyBinding{}} {
		uid := objectUID(t, c1, obj, name)
		require.NoError(t, c1.Delete(ctx, withName(obj, name)))
		require.Eventually(t, func() bool {
			got := obj.DeepCopyObject().(client.Object)
			return c1.Get(ctx, client.ObjectKey{Name: name}, got) == nil && got.GetUID() != uid
		}, repairWithin, 50*time.Millisecond, "the %T is back on spoke-1", obj)
		requireStamped(t, c1, gvk)
	}
	createWhenServed(t, c1, instance(gvk, "repolicied-b", map[string]any{"name": "repolicied-b"}))
	requireState(t, c1, gvk, "repolicied-b", "ACTIVE")
	requireState(t, c1, gvk, "repolicied-a", "ACTIVE")
	assert.Equal(t, map[string]string{"spoke-1": "Established 2/2", "spoke-2": "Established 0/0"}, clusterStates(h, graphRGD.Name))
}

// statusWatch polls a graph's FleetStatus on one cluster as often as it
// can and notes what it saw.
type statusWatch struct {
	stopped chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	gap     statusGap
}

type statusGap struct {
	notEstablished bool // the cluster was shown not established
	missing        bool // the cluster was shown with its CRD Missing
	unhealthy      bool // the RGD's summary counted an unhealthy cluster
	// claimedAfterLoss: ready instances were counted there at any time
	// since it was first shown Missing, or, once back is set, reachable.
	claimedAfterLoss bool
	back             bool // the cluster's servers were started again
	seenBack         bool // the hub was seen reaching it since
	// mostAfterBack is the most instances counted there (total or ready)
	// since seenBack.
	mostAfterBack int
	// healthyOverLoss: the RGD's summary was healthy, and a read of the
	// cluster right after found the graph's CRD absent (watchServing).
	healthyOverLoss bool
}

func watchStatus(t *testing.T, h *sdk.Hub, graph, cluster string) *statusWatch {
	t.Helper()
	return watchServing(t, h, graph, cluster, nil)
}

// watchServing is watchStatus that also reads the cluster whenever the
// summary is healthy: crdAbsent reports whether the cluster answers that
// the graph's CRD is not there.
func watchServing(t *testing.T, h *sdk.Hub, graph, cluster string, crdAbsent func() bool) *statusWatch {
	t.Helper()
	w := &statusWatch{stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stopped:
				return
			case <-time.After(2 * time.Millisecond):
			}
			st := h.FleetStatus(graph)
			summary := rgd.Summary(st)
			overLoss := summary.Unhealthy == 0 && crdAbsent != nil && crdAbsent()
			w.mu.Lock()
			w.gap.unhealthy = w.gap.unhealthy || summary.Unhealthy > 0
			w.gap.healthyOverLoss = w.gap.healthyOverLoss || overLoss
			for _, c := range st.Clusters {
				if c.Cluster != cluster {
					continue
				}
				w.gap.notEstablished = w.gap.notEstablished || c.CRD != hub.CRDEstablished
				w.gap.missing = w.gap.missing || c.CRD == hub.CRDMissing
				w.gap.seenBack = w.gap.seenBack || (w.gap.back && c.CRD != hub.CRDUnreachable)
				if w.gap.seenBack {
					w.gap.mostAfterBack = max(w.gap.mostAfterBack, c.Instances, c.ReadyInstances)
				}
				lossSeen := w.gap.missing || w.gap.seenBack
				w.gap.claimedAfterLoss = w.gap.claimedAfterLoss || (lossSeen && c.ReadyInstances > 0)
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// restarted notes that the cluster's servers were started again: from
// the first poll that shows it reachable, the restart counts as seen.
func (w *statusWatch) restarted() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gap.back = true
}

// sofar is what the watch has seen so far.
func (w *statusWatch) sofar() statusGap {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gap
}

func (w *statusWatch) stop() statusGap {
	select {
	case <-w.stopped:
	default:
		close(w.stopped)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gap
}

// requireStamped waits until a dry-run create of an instance of gvk on c
// comes back stamped by the admission policy.
func requireStamped(t *testing.T, c client.Client, gvk schema.GroupVersionKind) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		probe := instance(gvk, "stamp-probe", map[string]any{"name": "stamp-probe"})
		require.NoError(ct, c.Create(context.Background(), probe, client.DryRunAll))
		assert.Contains(ct, probe.GetFinalizers(), contract.Finalizer)
	}, repairWithin, tick, "new instances are stamped by the admission policy")
}

func crdNamed(name string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = name
	return crd
}

func crdUIDOf(t *testing.T, c client.Client, name string) types.UID {
	t.Helper()
	return objectUID(t, c, &apiextensionsv1.CustomResourceDefinition{}, name)
}

func objectUID(t *testing.T, c client.Client, obj client.Object, name string) types.UID {
	t.Helper()
	got := obj.DeepCopyObject().(client.Object)
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, got))
	return got.GetUID()
}

func withName(obj client.Object, name string) client.Object {
	out := obj.DeepCopyObject().(client.Object)
	out.SetName(name)
	return out
}

func isEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// A spoke whose API server and etcd are stopped and started again empty,
// at the same address (a cluster rebuilt there, or whose etcd was lost),
// has the graph's CRD back within 30 s, and once the hub has seen the CRD
// missing it never counts the instances that went with the old state;
// an instance created afterwards becomes ACTIVE. It has a fleet of its
// own: it stops a spoke.
func TestASpokeRebuiltEmptyGetsItsCRDBackAndLosesItsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, graphRGD, gvk, spoke, c1 := startRestartedSpokeGraph(t, "rebuilt", "RebuiltWebApp")

	require.NoError(t, spoke.StopServers())
	watch := watchServing(t, h, graphRGD.Name, "spoke-1", func() bool {
		err := c1.Get(ctx, client.ObjectKey{Name: crdName(gvk)}, &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err)
	})
	require.NoError(t, spoke.StartServers(true))
	watch.restarted()
	require.Eventually(t, func() bool {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		return c1.Get(ctx, client.ObjectKey{Name: crdName(gvk)}, crd) == nil && isEstablished(crd)
	}, 30*time.Second, 50*time.Millisecond, "the CRD is back on the rebuilt spoke")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, "Established 0/0", clusterStates(h, graphRGD.Name)["spoke-1"], "the lost instances are not counted")
		assert.True(ct, watch.sofar().seenBack, "the hub is seen reaching spoke-1 again")
	}, wait, tick)
	gap := watch.stop()
	assert.True(t, gap.notEstablished, "the status showed spoke-1 not established (Unreachable, then Missing if the prober was slower)")
	assert.True(t, gap.seenBack, "the hub was seen reaching spoke-1 again")
	assert.True(t, gap.unhealthy, "the RGD's summary was unhealthy meanwhile")
	assert.False(t, gap.claimedAfterLoss, "no ready instance counted once the rebuilt spoke was seen again")
	assert.False(t, gap.healthyOverLoss, "the RGD's summary was healthy while the rebuilt spoke lacked the CRD")

	createWhenServed(t, c1, instance(gvk, "rebuilt-c", map[string]any{"name": "rebuilt-c"}))
	requireState(t, c1, gvk, "rebuilt-c", "ACTIVE")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, "Established 1/1", clusterStates(h, graphRGD.Name)["spoke-1"])
	}, wait, tick)
}

// A spoke whose etcd is restored from a cold snapshot taken earlier (its
// resourceVersions go back) serves what the snapshot holds: the graph's
// CRD, which the snapshot has, stays established; the instances it holds
// are counted and ACTIVE, and an instance created after the snapshot is
// never counted once the hub has seen the spoke again. Meanwhile the RGD's
// summary is unhealthy. It has a fleet of its own: it stops a spoke.
func TestASpokeRestoredFromAnOlderSnapshotCountsOnlyWhatItHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, graphRGD, gvk, spoke, c1 := startRestartedSpokeGraph(t, "restored", "RestoredWebApp")
	held := []string{"restored-a", "restored-b"}
	require.NoError(t, spoke.StopServers())
	snapshot, err := spoke.SnapshotData()
	require.NoError(t, err)
	require.NoError(t, spoke.StartServers(false))
	createWhenServed(t, c1, instance(gvk, "restored-later", map[string]any{"name": "restored-later"}))
	requireState(t, c1, gvk, "restored-later", "ACTIVE")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, "Established 3/3", clusterStates(h, graphRGD.Name)["spoke-1"])
	}, wait, tick)

	require.NoError(t, spoke.StopServers())
	watch := watchStatus(t, h, graphRGD.Name, "spoke-1")
	require.Eventually(t, func() bool { return watch.sofar().notEstablished && watch.sofar().unhealthy }, wait, tick,
		"the status shows spoke-1 not established, and the RGD unhealthy, while it is away")
	require.NoError(t, spoke.StartServersFrom(snapshot))
	watch.restarted()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, "Established 2/2", clusterStates(h, graphRGD.Name)["spoke-1"], "only what the snapshot holds is counted")
		assert.True(ct, watch.sofar().seenBack, "the hub is seen reaching spoke-1 again")
	}, wait, tick)
	gap := watch.stop()
	assert.LessOrEqual(t, gap.mostAfterBack, len(held), "the instance the snapshot lacks was counted once spoke-1 was seen again")
	err = c1.Get(ctx, client.ObjectKey{Namespace: "default", Name: "restored-later"}, instance(gvk, "restored-later", nil))
	assert.True(t, apierrors.IsNotFound(err), "the restored spoke lacks the later instance: %v", err)
	for _, name := range held {
		requireState(t, c1, gvk, name, "ACTIVE")
	}
}

// startRestartedSpokeGraph starts a fleet of the test's own (the test stops
// a spoke) and a Hub serving the WebApp graph renamed name and kind, with
// the instances <name>-a and <name>-b ACTIVE on spoke-1 and counted. It
// returns the Hub, the graph, its kind, spoke-1 and a client of it.
func startRestartedSpokeGraph(t *testing.T, name, kind string) (*sdk.Hub, *v1alpha1.ResourceGraphDefinition, schema.GroupVersionKind, *fgtesting.Cluster, client.Client) {
	t.Helper()
	ctx := context.Background()
	fleet := fgtesting.StartFleet(t, 2)
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	graphRGD, gvk := renamedRGD(readRGD(t, "testdata/webapp-rgd.yaml"), name, kind)
	require.NoError(t, h.RegisterGraph(ctx, graphRGD))
	spoke := fleet.Spoke("spoke-1")
	c1 := newClient(t, spoke.Config)
	for _, instanceName := range []string{name + "-a", name + "-b"} {
		createWhenServed(t, c1, instance(gvk, instanceName, map[string]any{"name": instanceName}))
		requireState(t, c1, gvk, instanceName, "ACTIVE")
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, "Established 2/2", clusterStates(h, graphRGD.Name)["spoke-1"])
	}, wait, tick)
	return h, graphRGD, gvk, spoke, c1
}
