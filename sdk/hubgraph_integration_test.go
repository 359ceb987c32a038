//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var linkGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Link"}

// linkRGD is a hub graph across three clusters: db on spoke-1 (a literal
// target), egress on the cluster the instance names (a computed target)
// reading db's port, and record on the hub (no target) reading egress. The
// DAG is db -> egress -> record, so deletion goes record, egress, db.
const linkRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: link
spec:
  schema:
    apiVersion: v1alpha1
    kind: Link
    spec:
      port: string | default="5432"
      egressCluster: string
    status:
      upstream: ${egress.data.upstream}
  resources:
  - id: db
    target:
      cluster:
        name: spoke-1
    readyWhen:
    - ${db.data.port != ""}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-db
      data:
        port: ${schema.spec.port}
  - id: egress
    target:
      cluster:
        name: ${schema.spec.egressCluster}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-egress
      data:
        upstream: ${"db." + db.metadata.namespace + ":" + db.data.port}
  - id: record
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-record
      data:
        egress: ${egress.metadata.name}
`

// hubGraphFleet is a hub and three spokes engaged from kubeconfig Secrets;
// spoke-1 and spoke-2 are labelled mesh=true, which is the platform's
// allowed set, and spoke-3 is not.
type hubGraphFleet struct {
	fleet   *fgtesting.Fleet
	hub     client.Client
	spokes  map[string]client.Client
	clients map[string]client.Client // spokes and "hub"
}

func startHubGraphFleet(t *testing.T, opts sdk.Options) (*hubGraphFleet, *sdk.Hub, func()) {
	t.Helper()
	fleet := fgtesting.StartFleet(t, 3) // its own: the secret provider engages every kubeconfig Secret on its hub cluster
	ctx := context.Background()
	f := &hubGraphFleet{fleet: fleet, hub: newClient(t, fleet.Hub.Config), spokes: map[string]client.Client{}, clients: map[string]client.Client{}}
	h, stop := f.startHub(t, opts)
	require.NoError(t, f.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}))
	for _, s := range fleet.Spokes() {
		l := map[string]string{secret.DefaultSecretLabel: "true"}
		if s.Name != "spoke-3" {
			l[secret.LabelPrefix+"mesh"] = "true"
		}
		require.NoError(t, f.hub.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: secret.DefaultNamespace, Name: s.Name, Labels: l},
			Data:       map[string][]byte{secret.DefaultDataKey: s.Kubeconfig},
		}))
		f.spokes[s.Name] = newClient(t, s.Config)
		f.clients[s.Name] = f.spokes[s.Name]
	}
	f.clients["hub"] = f.hub
	return f, h, stop
}

// startHub runs a new Hub with the secret provider on the fleet's hub
// cluster until stop or the end of the test.
func (f *hubGraphFleet) startHub(t *testing.T, opts sdk.Options) (h *sdk.Hub, stop func()) {
	t.Helper()
	h, err := sdk.NewHub(secret.New(secret.Options{Safety: secret.Safety{AllowLoopback: true}}), opts)
	require.NoError(t, err)
	return h, fgtesting.StartStoppable(t, func(ctx context.Context) error { return h.Run(ctx, f.fleet.Hub.Config) })
}

func meshOnly() sdk.Options {
	return sdk.Options{
		DisableRGDController: true,
		Targets:              sdk.TargetOptions{AllowedClusters: &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "true"}}},
	}
}

func (f *hubGraphFleet) configMap(cluster, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := f.clients[cluster].Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, cm)
	return cm, err
}

func (f *hubGraphFleet) link(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(linkGVK)
	if err := f.hub.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u); err != nil {
		return nil
	}
	return u
}

// requireData waits until the named ConfigMap in cluster has data.
func (f *hubGraphFleet) requireData(t *testing.T, cluster, name string, data map[string]string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cm, err := f.configMap(cluster, name)
		require.NoError(ct, err)
		assert.Equal(ct, data, cm.Data)
	}, wait, tick, "%s in %s", name, cluster)
}

// requireNowhere checks that no ConfigMap named after the instance exists
// in any cluster.
func (f *hubGraphFleet) requireNowhere(t *testing.T, instance string) {
	t.Helper()
	for cluster, c := range f.clients {
		list := &corev1.ConfigMapList{}
		require.NoError(t, c.List(context.Background(), list))
		for _, cm := range list.Items {
			assert.False(t, strings.HasPrefix(cm.Name, instance+"-"), "%s/%s was written in %s", cm.Namespace, cm.Name, cluster)
		}
	}
}

func condition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// A hub instance whose resources live on two spokes and the hub: a value
// read on spoke-1 is written on spoke-2, an update reaches both, drift on
// spoke-2 is put back; an instance naming a cluster outside the allowed
// set writes nothing anywhere; deletion goes in reverse DAG order across
// clusters.
func TestHubGraphAcrossClusters(t *testing.T) {
	t.Parallel()
	f, h, _ := startHubGraphFleet(t, meshOnly())
	ctx := context.Background()
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, linkRGD)))
	createWhenServed(t, f.hub, instance(linkGVK, "web", map[string]any{"egressCluster": "spoke-2"}))

	t.Run("values flow across clusters and the instance is ACTIVE on the hub", func(t *testing.T) {
		f.requireData(t, "spoke-1", "web-db", map[string]string{"port": "5432"})
		f.requireData(t, "spoke-2", "web-egress", map[string]string{"upstream": "db.default:5432"})
		f.requireData(t, "hub", "web-record", map[string]string{"egress": "web-egress"})
		requireState(t, f.hub, linkGVK, "web", "ACTIVE")
		inst := f.link("web")
		upstream, _, _ := unstructured.NestedString(inst.Object, "status", "upstream")
		assert.Equal(t, "db.default:5432", upstream, "status projects a value read on spoke-2")
		_, err := f.configMap("spoke-3", "web-egress")
		assert.True(t, apierrors.IsNotFound(err), "nothing on spoke-3: %v", err)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Equal(ct, []sdk.TargetStatus{
				{Cluster: "", Instances: 1, ReadyInstances: 1, Engaged: true},
				{Cluster: "spoke-1", Instances: 1, ReadyInstances: 1, Engaged: true},
				{Cluster: "spoke-2", Instances: 1, ReadyInstances: 1, Engaged: true},
			}, h.FleetStatus("link").Targets, "FleetStatus lists the clusters the instance writes to, not spoke-3")
		}, wait, tick)

		cm, err := f.configMap("spoke-2", "web-egress")
		require.NoError(t, err)
		assert.Equal(t, "web", cm.Labels["fleetgraph.dev/instance-name"])
		assert.Equal(t, "default", cm.Labels["fleetgraph.dev/instance-namespace"])
		assert.Equal(t, string(inst.GetUID()), cm.Labels["fleetgraph.dev/instance-uid"])
		assert.NotEmpty(t, cm.Labels["fleetgraph.dev/hub"], "the child names the hub that wrote it")
	})

	t.Run("an update reaches both spokes", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			u := f.link("web")
			require.NotNil(ct, u)
			require.NoError(ct, unstructured.SetNestedField(u.Object, "6000", "spec", "port"))
			require.NoError(ct, f.hub.Update(ctx, u))
		}, wait, tick)
		f.requireData(t, "spoke-1", "web-db", map[string]string{"port": "6000"})
		f.requireData(t, "spoke-2", "web-egress", map[string]string{"upstream": "db.default:6000"})
	})

	t.Run("drift on spoke-2 is repaired", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			cm, err := f.configMap("spoke-2", "web-egress")
			require.NoError(ct, err)
			cm.Data["upstream"] = "somewhere-else"
			require.NoError(ct, f.spokes["spoke-2"].Update(ctx, cm))
		}, wait, tick)
		f.requireData(t, "spoke-2", "web-egress", map[string]string{"upstream": "db.default:6000"})
	})

	t.Run("a retargeted resource moves and its old child is pruned", func(t *testing.T) {
		createWhenServed(t, f.hub, instance(linkGVK, "move", map[string]any{"egressCluster": "spoke-2"}))
		f.requireData(t, "spoke-2", "move-egress", map[string]string{"upstream": "db.default:5432"})
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			u := f.link("move")
			require.NotNil(ct, u)
			require.NoError(ct, unstructured.SetNestedField(u.Object, "spoke-1", "spec", "egressCluster"))
			require.NoError(ct, f.hub.Update(ctx, u))
		}, wait, tick)
		f.requireData(t, "spoke-1", "move-egress", map[string]string{"upstream": "db.default:5432"})
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			_, err := f.configMap("spoke-2", "move-egress")
			assert.True(ct, apierrors.IsNotFound(err), "the child left behind on spoke-2 is pruned: %v", err)
		}, wait, tick)
		f.deleteLink(t, "move")
	})

	t.Run("what is not ours is never written or deleted", func(t *testing.T) {
		squat := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "squat-egress"}, Data: map[string]string{"owner": "someone"}}
		require.NoError(t, f.spokes["spoke-2"].Create(ctx, squat))
		createWhenServed(t, f.hub, instance(linkGVK, "squat", map[string]any{"egressCluster": "spoke-2"}))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			u := f.link("squat")
			require.NotNil(ct, u)
			c := condition(u, "Ready")
			require.NotNil(ct, c)
			assert.Contains(ct, c["message"], "squat-egress")
			assert.Contains(ct, c["message"], "not ours")
		}, wait, tick)
		f.deleteLink(t, "squat")
		cm, err := f.configMap("spoke-2", "squat-egress")
		require.NoError(t, err, "deleting the instance leaves the object it did not own")
		assert.Equal(t, map[string]string{"owner": "someone"}, cm.Data)
		assert.Empty(t, cm.Labels)
		_, err = f.configMap("spoke-1", "squat-db")
		assert.True(t, apierrors.IsNotFound(err), "its own child is deleted: %v", err)
	})

	t.Run("a cluster outside the allowed set is refused before any write", func(t *testing.T) {
		for name, egress := range map[string]string{"evil": "spoke-3", "lost": "no-such-cluster"} {
			createWhenServed(t, f.hub, instance(linkGVK, name, map[string]any{"egressCluster": egress}))
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				u := f.link(name)
				require.NotNil(ct, u)
				c := condition(u, "TargetsAllowed")
				require.NotNil(ct, c)
				assert.Equal(ct, "False", c["status"])
				msg, _ := c["message"].(string)
				assert.Contains(ct, msg, `resource "egress"`)
				assert.Contains(ct, msg, fmt.Sprintf("cluster %q", egress))
				state, _, _ := unstructured.NestedString(u.Object, "status", "state")
				assert.Equal(ct, "ERROR", state)
			}, wait, tick)
			t.Logf("%s: %v", name, condition(f.link(name), "TargetsAllowed")["message"])
			f.requireNowhere(t, name)
			assert.Empty(t, f.link(name).GetFinalizers(), "a refused instance holds no finalizer")
		}
	})

	t.Run("deletion goes in reverse DAG order across clusters", func(t *testing.T) {
		// Hold egress (spoke-2) with a finalizer of our own: record (hub)
		// must go first, and db (spoke-1) only once egress is gone.
		const hold = "test.fleetgraph.dev/hold"
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			cm, err := f.configMap("spoke-2", "web-egress")
			require.NoError(ct, err)
			cm.Finalizers = append(cm.Finalizers, hold)
			require.NoError(ct, f.spokes["spoke-2"].Update(ctx, cm))
		}, wait, tick)
		require.NoError(t, f.hub.Delete(ctx, f.link("web")))

		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			_, err := f.configMap("hub", "web-record")
			assert.True(ct, apierrors.IsNotFound(err), "record on the hub goes first: %v", err)
			cm, err := f.configMap("spoke-2", "web-egress")
			require.NoError(ct, err)
			assert.NotNil(ct, cm.DeletionTimestamp, "egress on spoke-2 is being deleted")
			u := f.link("web")
			require.NotNil(ct, u)
			c := condition(u, "Ready")
			require.NotNil(ct, c)
			assert.Contains(ct, c["message"], "web-egress in spoke-2")
		}, wait, tick)
		db, err := f.configMap("spoke-1", "web-db")
		require.NoError(t, err)
		assert.Nil(t, db.DeletionTimestamp, "db on spoke-1 waits for egress on spoke-2")

		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			cm, err := f.configMap("spoke-2", "web-egress")
			require.NoError(ct, err)
			cm.Finalizers = nil
			require.NoError(ct, f.spokes["spoke-2"].Update(ctx, cm))
		}, wait, tick)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Nil(ct, f.link("web"), "the instance is gone once its children are")
			_, err := f.configMap("spoke-1", "web-db")
			assert.True(ct, apierrors.IsNotFound(err), "db on spoke-1 deleted last: %v", err)
		}, wait, tick)
		f.requireNowhere(t, "web")
	})

	t.Run("deletion waits for a target that left the fleet and says so", func(t *testing.T) {
		createWhenServed(t, f.hub, instance(linkGVK, "far", map[string]any{"egressCluster": "spoke-2"}))
		f.requireData(t, "spoke-2", "far-egress", map[string]string{"upstream": "db.default:5432"})
		requireState(t, f.hub, linkGVK, "far", "ACTIVE")
		kubeconfig := &corev1.Secret{}
		require.NoError(t, f.hub.Get(ctx, client.ObjectKey{Namespace: secret.DefaultNamespace, Name: "spoke-2"}, kubeconfig))
		require.NoError(t, f.hub.Delete(ctx, kubeconfig))
		require.NoError(t, f.hub.Delete(ctx, f.link("far")))

		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			u := f.link("far")
			require.NotNil(ct, u)
			state, _, _ := unstructured.NestedString(u.Object, "status", "state")
			assert.Equal(ct, "DELETING", state)
			c := condition(u, "Ready")
			require.NotNil(ct, c)
			assert.Contains(ct, c["message"], "unreachable")
			assert.Contains(ct, c["message"], `"spoke-2"`)
		}, wait, tick)
		_, err := f.configMap("hub", "far-record")
		assert.True(t, apierrors.IsNotFound(err), "the wave before spoke-2's went: %v", err)
		db, err := f.configMap("spoke-1", "far-db")
		require.NoError(t, err, "the wave after spoke-2's waits")
		assert.Nil(t, db.DeletionTimestamp)

		// spoke-2 comes back: the deletion finishes there and on spoke-1.
		kubeconfig.ResourceVersion, kubeconfig.UID = "", ""
		require.NoError(t, f.hub.Create(ctx, kubeconfig))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Nil(ct, f.link("far"))
		}, wait, tick)
		f.requireNowhere(t, "far")
	})
}

// deleteLink deletes a hub instance and waits until it is gone.
func (f *hubGraphFleet) deleteLink(t *testing.T, name string) {
	t.Helper()
	u := f.link(name)
	require.NotNil(t, u)
	require.NoError(t, client.IgnoreNotFound(f.hub.Delete(context.Background(), u)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Nil(ct, f.link(name))
	}, wait, tick, "deleting %s", name)
}

// Under Strict, a graph with a target is refused, naming target.
func TestStrictHubRefusesTargets(t *testing.T) {
	t.Parallel()
	h, err := sdk.NewHub(nil, sdk.Options{Strict: true, DisableRGDController: true})
	require.NoError(t, err)
	err = h.RegisterGraph(context.Background(), rgdFromString(t, linkRGD))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "target")
	assert.Contains(t, err.Error(), "Strict")
}

// A hub stopped while it reconciles 100 hub instances, each writing on two
// spokes and the hub, and started again: every instance becomes ACTIVE
// with exactly its own children, one per cluster (the hub's identity is
// the same after the restart, so they are still its own), and deleting
// them all leaves nothing anywhere. About 25 to 31 s under -race on 2
// busy cores (load 16 to 19).
func TestHubGraphResumesAfterARestart(t *testing.T) {
	t.Parallel()
	const n = 100
	f, h, stop := startHubGraphFleet(t, meshOnly())
	ctx := context.Background()
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, linkRGD)))
	createWhenServed(t, f.hub, instance(linkGVK, "r0", map[string]any{"egressCluster": "spoke-2"}))
	for i := 1; i < n; i++ {
		require.NoError(t, f.hub.Create(ctx, instance(linkGVK, fmt.Sprintf("r%d", i), map[string]any{"egressCluster": "spoke-2"})))
	}
	// Stop the hub once some instance has children, while the others are
	// still being reconciled.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := f.configMap("spoke-1", "r0-db")
		assert.NoError(ct, err)
	}, wait, tick)
	stop()
	active := 0
	for i := range n {
		if state(f.hub, linkGVK, fmt.Sprintf("r%d", i)) == "ACTIVE" {
			active++
		}
	}
	t.Logf("%d of %d instances were ACTIVE when the hub stopped", active, n)

	h2, _ := f.startHub(t, meshOnly())
	require.NoError(t, h2.RegisterGraph(ctx, rgdFromString(t, linkRGD)))
	for i := range n {
		requireState(t, f.hub, linkGVK, fmt.Sprintf("r%d", i), "ACTIVE")
	}
	count := func(cluster string) int {
		list := &corev1.ConfigMapList{}
		require.NoError(t, f.clients[cluster].List(ctx, list, client.MatchingLabels{"fleetgraph.dev/graph": "link"}))
		return len(list.Items)
	}
	for _, c := range []string{"hub", "spoke-1", "spoke-2", "spoke-3"} {
		want := n
		if c == "spoke-3" {
			want = 0
		}
		assert.Equal(t, want, count(c), "children of the graph in %s", c)
	}
	// Each instance has its own child once in each of its clusters: no
	// duplicate, and none missing.
	for _, c := range []string{"hub", "spoke-1", "spoke-2"} {
		list := &corev1.ConfigMapList{}
		require.NoError(t, f.clients[c].List(ctx, list, client.MatchingLabels{"fleetgraph.dev/graph": "link"}))
		perUID := map[string]int{}
		for _, cm := range list.Items {
			perUID[cm.Labels["fleetgraph.dev/instance-uid"]]++
		}
		for i := range n {
			u := f.link(fmt.Sprintf("r%d", i))
			require.NotNil(t, u)
			assert.Equal(t, 1, perUID[string(u.GetUID())], "r%d's children in %s", i, c)
		}
	}
	for i := range n {
		require.NoError(t, f.hub.Delete(ctx, f.link(fmt.Sprintf("r%d", i))))
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		for i := range n {
			assert.Nil(ct, f.link(fmt.Sprintf("r%d", i)), "r%d deleted", i)
		}
	}, wait, tick)
	for _, c := range []string{"hub", "spoke-1", "spoke-2", "spoke-3"} {
		assert.Zero(t, count(c), "orphans in %s", c)
	}
}

// One target spoke frozen (its API server stopped): the instance's
// resources elsewhere and the instances that do not use it keep
// reconciling, the instance names the frozen cluster, and after the
// resume everything converges with each child once.
func TestHubGraphFrozenTargetBlocksOnlyItsDependents(t *testing.T) {
	t.Parallel()
	opts := meshOnly()
	opts.Targets.CallTimeout = 2 * time.Second
	f, h, _ := startHubGraphFleet(t, opts)
	ctx := context.Background()
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, linkRGD)))
	createWhenServed(t, f.hub, instance(linkGVK, "web", map[string]any{"egressCluster": "spoke-2"}))
	requireState(t, f.hub, linkGVK, "web", "ACTIVE")

	frozen := f.fleet.Spoke("spoke-2")
	require.NoError(t, frozen.Pause())
	t.Cleanup(func() { _ = frozen.Resume() })

	// The instance's resource on spoke-1 follows an update.
	start := time.Now()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := f.link("web")
		require.NotNil(ct, u)
		require.NoError(ct, unstructured.SetNestedField(u.Object, "7000", "spec", "port"))
		require.NoError(ct, f.hub.Update(ctx, u))
	}, wait, tick)
	f.requireData(t, "spoke-1", "web-db", map[string]string{"port": "7000"})
	t.Logf("spoke-1's child followed the update %v after it, spoke-2 frozen (call timeout %v)", time.Since(start).Round(time.Millisecond), opts.Targets.CallTimeout)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := f.link("web")
		require.NotNil(ct, u)
		c := condition(u, "ResourcesReady")
		require.NotNil(ct, c)
		assert.Equal(ct, "ClusterUnreachable", c["reason"])
		assert.Contains(ct, c["message"], `cluster "spoke-2" is unreachable`)
	}, wait, tick)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		byName := map[string]sdk.TargetStatus{}
		for _, ts := range h.FleetStatus("link").Targets {
			byName[ts.Cluster] = ts
		}
		assert.NotEmpty(ct, byName["spoke-2"].Unreachable, "FleetStatus says spoke-2 does not answer")
		assert.Equal(ct, 1, byName["spoke-2"].Instances)
		assert.Empty(ct, byName["spoke-1"].Unreachable)
	}, wait, tick)

	// Another instance that does not touch spoke-2 becomes ACTIVE.
	start = time.Now()
	createWhenServed(t, f.hub, instance(linkGVK, "calm", map[string]any{"egressCluster": "spoke-1"}))
	requireState(t, f.hub, linkGVK, "calm", "ACTIVE")
	t.Logf("an instance on spoke-1 and the hub became ACTIVE in %v while spoke-2 was frozen", time.Since(start).Round(time.Millisecond))

	require.NoError(t, frozen.Resume())
	f.requireData(t, "spoke-2", "web-egress", map[string]string{"upstream": "db.default:7000"})
	requireState(t, f.hub, linkGVK, "web", "ACTIVE")
	list := &corev1.ConfigMapList{}
	require.NoError(t, f.spokes["spoke-2"].List(ctx, list, client.MatchingLabels{"fleetgraph.dev/graph": "link"}))
	assert.Len(t, list.Items, 1, "spoke-2 holds web's egress once")
}

var meshGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Mesh"}

// meshRGD puts a gateway in every cluster labelled mesh=true, each
// listing the others: one resource, a forEach over the fleet.
const meshRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: mesh
spec:
  schema:
    apiVersion: v1alpha1
    kind: Mesh
    spec:
      port: string | default="443"
  resources:
  - id: gateway
    forEach:
    - peer: ${fleet.clusters.filter(c, c.labels.?mesh.orValue("") == "true")}
    target:
      cluster:
        name: ${peer.name}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name + "-gateway-" + peer.name}
      data:
        port: ${schema.spec.port}
        peers: ${fleet.clusters.filter(c, c.labels.?mesh.orValue("") == "true" && c.name != peer.name).map(c, c.name).join(",")}
`

// forEach over the fleet makes one gateway per mesh cluster; labelling a
// cluster in adds one there, labelling one out prunes its gateway, and
// every gateway's list of peers follows.
func TestHubGraphForEachOverTheFleet(t *testing.T) {
	t.Parallel()
	f, h, _ := startHubGraphFleet(t, meshOnly())
	ctx := context.Background()
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, meshRGD)))
	createWhenServed(t, f.hub, instance(meshGVK, "m", map[string]any{}))
	gateways := func(want map[string]string) {
		t.Helper()
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			for _, c := range []string{"spoke-1", "spoke-2", "spoke-3"} {
				list := &corev1.ConfigMapList{}
				require.NoError(ct, f.spokes[c].List(ctx, list, client.MatchingLabels{"fleetgraph.dev/graph": "mesh"}))
				peers, ok := want[c]
				if !ok {
					assert.Empty(ct, list.Items, "no gateway in %s", c)
					continue
				}
				if assert.Len(ct, list.Items, 1, "one gateway in %s", c) {
					assert.Equal(ct, "m-gateway-"+c, list.Items[0].Name)
					assert.Equal(ct, peers, list.Items[0].Data["peers"], "peers of %s", c)
				}
			}
		}, wait, tick)
	}
	gateways(map[string]string{"spoke-1": "spoke-2", "spoke-2": "spoke-1"})
	requireState(t, f.hub, meshGVK, "m", "ACTIVE")

	relabel(t, f.hub, "spoke-3", map[string]string{secret.LabelPrefix + "mesh": "true"})
	gateways(map[string]string{"spoke-1": "spoke-2,spoke-3", "spoke-2": "spoke-1,spoke-3", "spoke-3": "spoke-1,spoke-2"})

	relabel(t, f.hub, "spoke-1", map[string]string{})
	gateways(map[string]string{"spoke-2": "spoke-3", "spoke-3": "spoke-2"})
	requireState(t, f.hub, meshGVK, "m", "ACTIVE")

	require.NoError(t, f.hub.Delete(ctx, f.mesh("m")))
	gateways(map[string]string{})
}

func (f *hubGraphFleet) mesh(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(meshGVK)
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

// An RGD object with targets, claimed by the RGD controller, is served on
// the hub like one registered from Go.
func TestHubGraphFromAnRGDObject(t *testing.T) {
	t.Parallel()
	opts := meshOnly()
	opts.DisableRGDController, opts.InstallRGDCRD = false, true
	opts.ConfineToNamespace = true
	f, h, _ := startHubGraphFleet(t, opts)
	ctx := context.Background()

	// Confined, a child rendered in another namespace of a target cluster
	// is not written.
	escape := strings.ReplaceAll(strings.ReplaceAll(linkRGD, "name: link", "name: escape"), "kind: Link", "kind: Escape")
	escape = strings.Replace(escape, "name: ${schema.metadata.name}-egress", "name: ${schema.metadata.name}-egress\n        namespace: kube-system", 1)
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, escape)))
	escapeGVK := schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Escape"}
	createWhenServed(t, f.hub, instance(escapeGVK, "out", map[string]any{"egressCluster": "spoke-2"}))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(escapeGVK)
		require.NoError(ct, f.hub.Get(ctx, client.ObjectKey{Namespace: "default", Name: "out"}, u))
		c := condition(u, "ResourcesReady")
		require.NotNil(ct, c)
		assert.Equal(ct, "OutsideNamespace", c["reason"])
		assert.Contains(ct, c["message"], "kube-system")
	}, wait, tick)
	err := f.spokes["spoke-2"].Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "out-egress"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "nothing written outside the namespace: %v", err)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		rgd := rgdFromString(t, linkRGD)
		assert.NoError(ct, client.IgnoreAlreadyExists(f.hub.Create(ctx, rgd)))
	}, wait, tick, "the hub serves RGDs")
	createWhenServed(t, f.hub, instance(linkGVK, "obj", map[string]any{"egressCluster": "spoke-2"}))
	f.requireData(t, "spoke-2", "obj-egress", map[string]string{"upstream": "db.default:5432"})
	requireState(t, f.hub, linkGVK, "obj", "ACTIVE")
	accepted := rgdCondition(f.hub, "link", "GraphAccepted")
	require.NotNil(t, accepted)
	assert.Equal(t, metav1.ConditionTrue, accepted.Status)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ready := rgdCondition(f.hub, "link", "Ready")
		require.NotNil(ct, ready)
		assert.Equal(ct, metav1.ConditionTrue, ready.Status, "%s: %s", ready.Reason, ready.Message)
	}, wait, tick, "a hub graph is not waiting for any spoke")

	// Deleting the RGD: the instance stays, and is still finalized when
	// deleted; then the RGD goes.
	rgdGone := func() {
		t.Helper()
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			err := f.hub.Get(ctx, client.ObjectKey{Name: "link"}, &v1alpha1.ResourceGraphDefinition{})
			assert.True(ct, apierrors.IsNotFound(err), "RGD link: %v", err)
		}, wait, tick)
	}
	require.NoError(t, f.hub.Delete(ctx, rgdFromString(t, linkRGD)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, f.hub.Get(ctx, client.ObjectKey{Name: "link"}, rgd))
		assert.NotNil(ct, rgd.DeletionTimestamp)
	}, wait, tick)
	f.deleteLink(t, "obj")
	f.requireNowhere(t, "obj")
	rgdGone()

	// With the orphan annotation, the instance is released: our finalizer
	// goes, its children stay.
	orphan := rgdFromString(t, linkRGD)
	orphan.Annotations = map[string]string{v1alpha1.AnnotationOrphanInstances: "true"}
	require.NoError(t, f.hub.Create(ctx, orphan))
	createWhenServed(t, f.hub, instance(linkGVK, "kept", map[string]any{"egressCluster": "spoke-2"}))
	requireState(t, f.hub, linkGVK, "kept", "ACTIVE")
	require.NoError(t, f.hub.Delete(ctx, orphan))
	rgdGone()
	u := f.link("kept")
	require.NotNil(t, u)
	assert.NotContains(t, u.GetFinalizers(), "fleetgraph.dev/finalizer")
	for cluster, name := range map[string]string{"spoke-1": "kept-db", "spoke-2": "kept-egress", "hub": "kept-record"} {
		_, err := f.configMap(cluster, name)
		assert.NoError(t, err, "%s stays in %s", name, cluster)
	}
}
