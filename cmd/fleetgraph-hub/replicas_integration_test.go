//go:build integration

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	fgreplicas "github.com/fleetgraph/fleetgraph/internal/replicas"
	fgshard "github.com/fleetgraph/fleetgraph/internal/shard"
	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The timings every replica of TestKilledReplica runs with: a killed
// replica's spokes are taken over within lease + 2 × min(renew, probe) =
// 8 s.
const (
	shardLease   = 6 * time.Second
	shardRenew   = 2 * time.Second
	shardProbe   = time.Second
	takeoverTime = shardLease + 2*min(shardRenew, shardProbe)
	// engageMargin is what serving a spoke takes once a replica starts it:
	// starting the spoke's cache, applying and establishing the CRD, and
	// the next metrics scrape.
	engageMargin = 5 * time.Second
	statusTTL    = 20 * time.Second
	// shardNamespace is where config/rbac/hub.yaml's Role
	// fleetgraph-hub-replicas lets replicas keep Leases and records.
	shardNamespace = "kube-system"
)

// hubReplica is one fleetgraph-hub process of TestKilledReplica.
type hubReplica struct {
	id      string
	metrics string // its metrics address
	*process
}

// TestKilledReplica runs three fleetgraph-hub processes as sharded replicas
// of one hub cluster with six spokes registered as kubeconfig Secrets, as
// an identity bound to exactly the roles of config/rbac/hub.yaml, and kills
// the busiest with SIGKILL: it renews and releases nothing. Every spoke is
// served by exactly one live process (as each process's metrics show)
// before and after; the killed replica's spokes are served again within
// the takeover bound plus a margin; instances created on them while no one
// served them become ACTIVE; every spoke ends with exactly one child per
// instance and none orphaned; the RGD's fleet status counts every spoke
// exactly once, sampled every 100 ms from start to end; and the killed
// replica's fleet status record is deleted once it expires. Not parallel:
// its subject is the takeover's bound.
func TestKilledReplica(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 6)
	admin, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	require.NoError(t, admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}))
	hubUser := bindDocumentedRoles(t, fleet.Hub, admin, "../../config/rbac/hub.yaml", "fleetgraph-hub")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "hub.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, hubUser.kubeconfig, 0o600))
	spokes := map[string]client.Client{}
	for _, s := range fleet.Spokes() {
		registerSpoke(t, admin, s.Name, s.Kubeconfig)
		spokes[s.Name], err = client.New(s.Config, client.Options{})
		require.NoError(t, err)
	}
	names := slices.Sorted(maps.Keys(spokes))

	bin := buildBinary(t)
	replicas := make([]*hubReplica, 3)
	for i := range replicas {
		replicas[i] = startReplicaProcess(t, bin, kubeconfig, fmt.Sprintf("replica-%d", i))
	}
	var live atomic.Pointer[[]*hubReplica]
	live.Store(&replicas)
	rgd := applyShardRGD(t, admin, replicas[0].process)
	counted := watchFleetCount(t, admin, rgd, len(names))

	owners := requireServedOnce(t, admin, replicas, names, 2*time.Minute)
	overlap := watchOverlap(t, func() []*hubReplica { return *live.Load() })
	for _, name := range names {
		createShard(t, spokes[name], name, "before")
	}
	requireShardsActive(t, spokes, names, "before")

	victim := busiestReplica(replicas, owners)
	orphaned := ownedBy(owners, victim.id)
	survivors := slices.DeleteFunc(slices.Clone(replicas), func(r *hubReplica) bool { return r == victim })
	live.Store(&survivors)
	t.Logf("killing %s, which serves %v", victim.id, orphaned)
	require.NoError(t, victim.cmd.Process.Kill()) // SIGKILL: no lease released
	start := time.Now()
	<-victim.done
	for _, name := range orphaned {
		createShard(t, spokes[name], name, "during")
	}
	requireServedOnce(t, admin, survivors, names, takeoverTime+engageMargin+30*time.Second)
	took := time.Since(start)
	t.Logf("spokes of %s served again %s after the kill (bound %s + margin %s)", victim.id, took, takeoverTime, engageMargin)
	assert.LessOrEqual(t, took, takeoverTime+engageMargin, "takeover within lease + 2 × min(renew, probe), plus engaging")

	requireShardsActive(t, spokes, names, "before")
	requireShardsActive(t, spokes, orphaned, "during")
	for _, name := range names {
		requireOneChildPerInstance(t, spokes[name], name)
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, admin.Get(context.Background(), client.ObjectKeyFromObject(rgd), got))
		require.NotNil(ct, got.Status.Fleet)
		assert.Equal(ct, int64(len(names)+len(orphaned)), got.Status.Fleet.ReadyInstances)
	}, time.Minute, 100*time.Millisecond, "the RGD's fleet status counts the instances of every replica")
	requireRecords(t, admin, survivors, names, statusTTL+10*time.Second)
	t.Logf("%s's fleet status record deleted %s after the kill (TTL %s)", victim.id, time.Since(start), statusTTL)
	overlap()
	counted()
	for _, r := range replicas {
		assert.NotContains(t, strings.ToLower(r.logs.String()), "forbidden", "%s: the documented roles cover every call of a replica", r.id)
	}
}

// requireRecords waits until the fleet status records on the hub are
// those of the live replicas only (a killed replica's is deleted once it
// expires) and together list every spoke exactly once.
func requireRecords(t *testing.T, hub client.Client, live []*hubReplica, names []string, within time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		list := &corev1.ConfigMapList{}
		require.NoError(ct, hub.List(context.Background(), list, client.InNamespace(shardNamespace),
			client.MatchingLabels{fgreplicas.LabelFleetStatusOf: "shard"}))
		var replicas, clusters []string
		for _, cm := range list.Items {
			replicas = append(replicas, cm.Labels[fgreplicas.LabelReplica])
			var statuses []struct{ Cluster string }
			require.NoError(ct, json.Unmarshal([]byte(cm.Data["clusters"]), &statuses), cm.Name)
			for _, s := range statuses {
				clusters = append(clusters, s.Cluster)
			}
		}
		var ids []string
		for _, r := range live {
			ids = append(ids, r.id)
		}
		assert.ElementsMatch(ct, ids, replicas, "replicas with a fleet status record")
		slices.Sort(clusters)
		assert.Equal(ct, names, clusters, "spokes in the records")
	}, within, 100*time.Millisecond, "the records of the live replicas only, every spoke in one")
}

// startReplicaProcess starts fleetgraph-hub as sharded replica id.
func startReplicaProcess(t *testing.T, bin, kubeconfig, id string) *hubReplica {
	t.Helper()
	r := &hubReplica{id: id, metrics: freeAddr(t)}
	r.process = startProcess(t, bin, "--kubeconfig", kubeconfig, "--allow-loopback-spokes",
		"--metrics-bind-address="+r.metrics, "--health-probe-bind-address=0",
		"--replicas-shard", "--replica-id="+id, "--shard-namespace="+shardNamespace,
		"--shard-lease-duration="+shardLease.String(), "--shard-renew-interval="+shardRenew.String(),
		"--shard-probe="+shardProbe.String(), "--replica-status-ttl="+statusTTL.String(), "--status-resync=1s")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s:%s", id, r.logs)
		}
	})
	return r
}

func applyShardRGD(t *testing.T, hub client.Client, p *process) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	rgds, err := v1alpha1.LoadFile("testdata/shard.yaml")
	require.NoError(t, err)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(hub.Create(context.Background(), rgds[0].DeepCopy())))
	}, time.Minute, 100*time.Millisecond, "a replica installs the RGD CRD: %s", p.logs)
	return rgds[0]
}

// watchFleetCount checks every 100 ms, until the returned stop is called,
// that the RGD's fleet status, once written, counts want clusters and lists
// no unhealthy cluster twice.
func watchFleetCount(t *testing.T, hub client.Client, rgd *v1alpha1.ResourceGraphDefinition, want int) (stop func()) {
	t.Helper()
	samples, written := 0, false
	sampling := every(100*time.Millisecond, func() {
		got := &v1alpha1.ResourceGraphDefinition{}
		if err := hub.Get(context.Background(), client.ObjectKeyFromObject(rgd), got); err != nil || got.Status.Fleet == nil {
			assert.False(t, written, "the RGD's fleet status disappeared (%v)", err)
			return
		}
		if !written && got.Status.Fleet.Clusters < int32(want) {
			return // replicas starting: each counts what is engaged so far
		}
		written, samples = true, samples+1
		assert.Equal(t, int32(want), got.Status.Fleet.Clusters, "clusters in the RGD's fleet status")
		seen := map[string]bool{}
		for _, u := range got.Status.Fleet.UnhealthyClusters {
			assert.False(t, seen[u.Name], "cluster %s listed twice as unhealthy", u.Name)
			seen[u.Name] = true
		}
	})
	return func() {
		sampling()
		assert.True(t, written, "the RGD's fleet status was never complete")
		t.Logf("the RGD's fleet status sampled %d times with every cluster once", samples)
	}
}

// requireServedOnce waits until every spoke is served (its CRD
// Established) by exactly one of replicas, as their metrics show, the one
// that holds the spoke's fence Lease on the hub, and returns who serves
// which.
func requireServedOnce(t *testing.T, hub client.Client, replicas []*hubReplica, names []string, within time.Duration) map[string]string {
	t.Helper()
	var owners map[string]string
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		owners = map[string]string{}
		for _, r := range replicas {
			states, err := r.clusterStates()
			require.NoError(ct, err, r.id)
			for cl, state := range states {
				require.Empty(ct, owners[cl], "%s served by %s and %s", cl, owners[cl], r.id)
				require.Equal(ct, "Established", state, "%s on %s", cl, r.id)
				owners[cl] = r.id
			}
		}
		require.Equal(ct, names, slices.Sorted(maps.Keys(owners)))
		for cl, owner := range owners {
			claims, err := fgshard.ClaimedBy(context.Background(), hub, shardNamespace, "mcr", cl)
			require.NoError(ct, err)
			require.Equal(ct, []string{owner}, claims, "live replicas whose Lease claims %s", cl)
		}
	}, within, 100*time.Millisecond, "every spoke served by exactly one replica")
	return owners
}

// watchOverlap checks every 100 ms, until the returned stop is called,
// that no spoke is served by two live replicas at once.
func watchOverlap(t *testing.T, live func() []*hubReplica) (stop func()) {
	return every(100*time.Millisecond, func() {
		by := map[string][]string{}
		for _, r := range live() {
			states, err := r.clusterStates()
			if err != nil {
				continue // a replica being killed; the others are checked
			}
			for cl := range states {
				by[cl] = append(by[cl], r.id)
			}
		}
		for cl, ids := range by {
			assert.Len(t, ids, 1, "%s served by %v at once", cl, ids)
		}
	})
}

var clusterState = regexp.MustCompile(`^fleetgraph_graph_cluster_state\{cluster="([^"]+)",graph="shard",state="([^"]+)"\} 1$`)

// clusterStates scrapes the replica's metrics: the state of graph shard on
// each spoke it serves.
func (r *hubReplica) clusterStates() (map[string]string, error) {
	res, err := probeClient.Get("http://" + r.metrics + "/metrics")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics of %s: %s", r.id, res.Status)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if m := clusterState.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = m[2]
		}
	}
	return out, sc.Err()
}

// every calls check every interval until the returned stop is called.
func every(interval time.Duration, check func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				check()
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

func busiestReplica(replicas []*hubReplica, owners map[string]string) *hubReplica {
	best := replicas[0]
	for _, r := range replicas[1:] {
		if len(ownedBy(owners, r.id)) > len(ownedBy(owners, best.id)) {
			best = r
		}
	}
	return best
}

func ownedBy(owners map[string]string, id string) []string {
	var out []string
	for cl, o := range owners {
		if o == id {
			out = append(out, cl)
		}
	}
	slices.Sort(out)
	return out
}

func shard(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
	u.SetAPIVersion("kro.run/v1alpha1")
	u.SetKind("Shard")
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

// createShard creates Shard name on the spoke once the spoke serves it.
func createShard(t *testing.T, spoke client.Client, cluster, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(spoke.Create(context.Background(), shard(name))))
	}, time.Minute, 100*time.Millisecond, "%s serves Shard", cluster)
}

func requireShardsActive(t *testing.T, spokes map[string]client.Client, clusters []string, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		for _, cl := range clusters {
			got := shard(name)
			require.NoError(ct, spokes[cl].Get(context.Background(), client.ObjectKeyFromObject(got), got))
			state, _, _ := unstructured.NestedString(got.Object, "status", "state")
			require.Equal(ct, contract.StateActive, state, "%s on %s", name, cl)
		}
	}, time.Minute, 100*time.Millisecond, "Shards %s ACTIVE on %v", name, clusters)
}

// requireOneChildPerInstance: on the spoke, every ConfigMap we manage
// belongs to a Shard that exists (none orphaned), and every Shard has
// exactly one (none lost, none duplicated).
func requireOneChildPerInstance(t *testing.T, spoke client.Client, cluster string) {
	t.Helper()
	ctx := context.Background()
	shards := &unstructured.UnstructuredList{}
	shards.SetAPIVersion("kro.run/v1alpha1")
	shards.SetKind("ShardList")
	require.NoError(t, spoke.List(ctx, shards))
	children := map[string][]string{}
	for _, s := range shards.Items {
		children[string(s.GetUID())] = nil
	}
	cms := &corev1.ConfigMapList{}
	require.NoError(t, spoke.List(ctx, cms, client.MatchingLabels{contract.LabelManagedBy: contract.ManagedBy}))
	for _, cm := range cms.Items {
		uid := cm.Labels[contract.LabelInstanceUID]
		_, ok := children[uid]
		assert.True(t, ok, "%s: orphaned child %s/%s of instance uid %s", cluster, cm.Namespace, cm.Name, uid)
		children[uid] = append(children[uid], cm.Namespace+"/"+cm.Name)
	}
	for uid, got := range children {
		assert.Len(t, got, 1, "%s: children of instance uid %s: %s", cluster, uid, strings.Join(got, ", "))
	}
}
