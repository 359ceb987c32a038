//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	fgreplicas "github.com/fleetgraph/fleetgraph/internal/replicas"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// replica is one hub replica of TestReplicas.
type replica struct {
	id    string
	hub   *sdk.Hub
	stop  func()
	alive atomic.Bool
}

// TestReplicas runs three hub replicas on multicluster-runtime's sharded
// coordinator against one hub cluster and six namespace-simulated spokes.
// Every spoke is served by exactly one replica; when the replica serving
// some is stopped, the others take them over within the lease bound, the
// instances created meanwhile reach ACTIVE, and every spoke ends with
// exactly one child per instance and none orphaned. A watcher checks
// throughout that no spoke is ever served by two replicas at once. Not
// parallel: its subject is the takeover's bound.
func TestReplicas(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 1)
	ctx := context.Background()
	spoke := fleet.Spoke("spoke-1")
	c := newClient(t, spoke.Config)
	names := make([]string, 6)
	for i := range names {
		names[i] = fmt.Sprintf("rep-%d", i)
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}))
	}
	sharding := sdk.ShardingOptions{LeaseDuration: 6 * time.Second, RenewInterval: 2 * time.Second, Probe: time.Second}
	replicas := make([]*replica, 3)
	for i := range replicas {
		replicas[i] = startReplica(t, fleet.Hub.Config, spoke.Config, fmt.Sprintf("replica-%d", i), sharding)
	}
	gvk := schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Shard"}
	hubClient := newClient(t, fleet.Hub.Config)
	createWhenServed(t, hubClient, toUnstructured(t, oneConfigMapRGD(t, gvk.Kind)))

	live := func() []*replica {
		return slices.DeleteFunc(slices.Clone(replicas), func(r *replica) bool { return !r.alive.Load() })
	}
	watch := watchOwnership(t, live, "shard")
	defer watch()

	owners := requireOwnedOnce(t, replicas, names, wait)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.Equal(ct, int32(len(names)), rgdClusters(t, hubClient, "shard"))
	}, wait, tick, "the RGD's fleet status counts every cluster")
	counted := watchRGDClusters(t, hubClient, "shard", len(names))
	defer counted()
	for _, ns := range names {
		createWhenServed(t, c, nsInstance(gvk, ns, "before"))
	}
	requireActive(t, c, gvk, names, "before")

	victim := busiest(replicas, owners)
	orphaned := slices.Sorted(maps.Keys(filter(owners, victim.id)))
	t.Logf("stopping %s, which serves %v", victim.id, orphaned)
	start := time.Now()
	victim.stop()
	victim.alive.Store(false) // only now: while it stops, it must not overlap with its successor
	for _, ns := range orphaned {
		require.NoError(t, c.Create(ctx, nsInstance(gvk, ns, "during")))
	}
	bound := sharding.TakeoverBound()
	requireOwnedOnce(t, live(), names, bound+10*time.Second)
	took := time.Since(start)
	t.Logf("clusters of %s served again after %s (bound %s)", victim.id, took, bound)
	assert.LessOrEqual(t, took, bound, "takeover within lease duration + 2 × min(renew, probe)")

	requireActive(t, c, gvk, names, "before")
	requireActive(t, c, gvk, orphaned, "during")
	requireExactChildrenIn(t, c, gvk, names)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, hubClient.Get(ctx, client.ObjectKey{Name: "shard"}, rgd))
		require.NotNil(ct, rgd.Status.Fleet)
		assert.Equal(ct, int64(len(names)+len(orphaned)), rgd.Status.Fleet.ReadyInstances)
	}, wait, tick, "the RGD's fleet status counts the instances of every replica")

	counted()
	require.NoError(t, hubClient.Delete(ctx, toUnstructured(t, oneConfigMapRGD(t, gvk.Kind))))
	for _, ns := range names {
		require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, nsInstance(gvk, ns, "before"))))
		require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, nsInstance(gvk, ns, "during"))))
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		records := &corev1.ConfigMapList{}
		require.NoError(ct, hubClient.List(ctx, records, client.MatchingLabels{fgreplicas.LabelFleetStatusOf: "shard"}))
		for _, r := range records.Items {
			isLive := slices.ContainsFunc(live(), func(l *replica) bool { return l.id == r.Labels[fgreplicas.LabelReplica] })
			assert.False(ct, isLive, "live replica %s still keeps a record of the deleted graph", r.Labels[fgreplicas.LabelReplica])
		}
	}, wait, tick, "each live replica deletes its own record of a deleted graph")
}

// rgdClusters is the cluster count of the RGD's fleet status, -1 if none.
func rgdClusters(t *testing.T, c client.Client, name string) int32 {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, rgd); err != nil || rgd.Status.Fleet == nil {
		return -1
	}
	return rgd.Status.Fleet.Clusters
}

// watchRGDClusters checks every 50 ms, until the returned stop is called,
// that the RGD's fleet status counts want clusters.
func watchRGDClusters(t *testing.T, c client.Client, name string, want int) (stop func()) {
	return sampleEvery(50*time.Millisecond, func() {
		assert.Equal(t, int32(want), rgdClusters(t, c, name), "clusters in the RGD's fleet status")
	})
}

func toUnstructured(t *testing.T, rgd *v1alpha1.ResourceGraphDefinition) *unstructured.Unstructured {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rgd)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: raw}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ResourceGraphDefinition"))
	return u
}

// startReplica runs one hub replica whose spokes are the namespaces rep-*
// of the API server at spokeCfg.
func startReplica(t *testing.T, hubCfg, spokeCfg *rest.Config, id string, opts sdk.ShardingOptions) *replica {
	t.Helper()
	provider, err := fgtesting.NewNamespaceProvider(spokeCfg, fgtesting.NamespaceProviderOptions{Prefix: "rep-"})
	require.NoError(t, err)
	hubClient, err := sdk.NewShardingClient(hubCfg) // as the guide says
	require.NoError(t, err)
	opts.ID = id
	mgr, err := mcmanager.New(hubCfg, provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}, mcmanager.WithCoordinator(sdk.NewShardedCoordinator(hubClient, opts)))
	require.NoError(t, err)
	h, err := sdk.NewHub(provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}, Fleet: sdk.FleetOptions{DepartureGrace: -1, StatusResync: time.Second}, Replicas: sdk.ReplicaOptions{ID: id}})
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	r := &replica{id: id, hub: h, stop: fgtesting.StartStoppable(t, mgr.Start)}
	r.alive.Store(true)
	return r
}

// ownership maps each spoke to the replicas serving it, by Clusters and by
// the graph's FleetStatus.
func ownership(replicas []*replica, graph string) (byClusters, byStatus map[string][]string) {
	byClusters, byStatus = map[string][]string{}, map[string][]string{}
	for _, r := range replicas {
		for _, cl := range r.hub.Clusters() {
			byClusters[cl] = append(byClusters[cl], r.id)
		}
		for _, cs := range r.hub.FleetStatus(graph).Clusters {
			byStatus[cs.Cluster] = append(byStatus[cs.Cluster], r.id)
		}
	}
	return byClusters, byStatus
}

// watchOwnership checks every 50 ms, until the returned stop is called,
// that no spoke is served by two replicas at once.
func watchOwnership(t *testing.T, live func() []*replica, graph string) (stop func()) {
	return sampleEvery(50*time.Millisecond, func() {
		byClusters, byStatus := ownership(live(), graph)
		for cl, ids := range byClusters {
			assert.Len(t, ids, 1, "cluster %s served by %v at once", cl, ids)
		}
		for cl, ids := range byStatus {
			assert.Len(t, ids, 1, "cluster %s in the fleet status of %v at once", cl, ids)
		}
	})
}

// sampleEvery calls check every interval until the returned stop is
// called (once or more).
func sampleEvery(interval time.Duration, check func()) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(interval): // sampling interval
			}
			check()
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-finished }) }
}

// requireOwnedOnce waits until every spoke is served by exactly one of
// replicas, in Clusters and in FleetStatus, and returns who serves which.
func requireOwnedOnce(t *testing.T, replicas []*replica, names []string, within time.Duration) map[string]string {
	t.Helper()
	owners := map[string]string{}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		byClusters, byStatus := ownership(replicas, "shard")
		for _, ns := range names {
			require.Len(ct, byClusters[ns], 1, "cluster %s served by %v", ns, byClusters[ns])
			require.Equal(ct, byClusters[ns], byStatus[ns], "cluster %s in the fleet status", ns)
			owners[ns] = byClusters[ns][0]
		}
		require.Len(ct, byClusters, len(names))
	}, within, 20*time.Millisecond, "every cluster served by exactly one replica")
	return owners
}

func busiest(replicas []*replica, owners map[string]string) *replica {
	best := replicas[0]
	for _, r := range replicas[1:] {
		if len(filter(owners, r.id)) > len(filter(owners, best.id)) {
			best = r
		}
	}
	return best
}

func filter(owners map[string]string, id string) map[string]string {
	out := map[string]string{}
	for cl, o := range owners {
		if o == id {
			out[cl] = o
		}
	}
	return out
}

// nsInstance is an instance named name in the spoke namespace ns.
func nsInstance(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	u := instance(gvk, name, map[string]any{"size": int64(1)})
	u.SetNamespace(ns)
	return u
}

func requireActive(t *testing.T, c client.Client, gvk schema.GroupVersionKind, namespaces []string, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		for _, ns := range namespaces {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			require.NoError(ct, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u))
			s, _, _ := unstructured.NestedString(u.Object, "status", "state")
			require.Equal(ct, contract.StateActive, s, "%s/%s", ns, name)
		}
	}, wait, tick, "instances %s ACTIVE in %v", name, namespaces)
}

// requireExactChildrenIn checks every namespace: each instance has exactly
// one ConfigMap labelled for it (one apply manager), and no ConfigMap of
// ours belongs to an instance that does not exist.
func requireExactChildrenIn(t *testing.T, c client.Client, gvk schema.GroupVersionKind, namespaces []string) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range namespaces {
		insts := &unstructured.UnstructuredList{}
		insts.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		require.NoError(t, c.List(ctx, insts, client.InNamespace(ns)))
		uids := map[string]int{}
		for _, i := range insts.Items {
			uids[string(i.GetUID())] = 0
		}
		cms := &corev1.ConfigMapList{}
		require.NoError(t, c.List(ctx, cms, client.InNamespace(ns), client.MatchingLabels{contract.LabelManagedBy: contract.ManagedBy}))
		for _, cm := range cms.Items {
			uid := cm.Labels[contract.LabelInstanceUID]
			_, ok := uids[uid]
			require.True(t, ok, "orphaned child %s/%s of instance uid %s", ns, cm.Name, uid)
			uids[uid]++
			appliers := 0
			for _, mf := range cm.ManagedFields {
				if mf.Operation == metav1.ManagedFieldsOperationApply {
					appliers++
				}
			}
			assert.Equal(t, 1, appliers, "%s/%s has one apply manager", ns, cm.Name)
		}
		for uid, n := range uids {
			assert.Equal(t, 1, n, "instance uid %s in %s has one child", uid, ns)
		}
	}
}
