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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
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

// A hub instance whose resources live on two spokes and the hub: a value
// read on spoke-1 is written on spoke-2, an update reaches both, drift on
// spoke-2 is put back; an instance naming a cluster outside the allowed
// set writes nothing anywhere; deletion goes in reverse DAG order across
// clusters.
func TestHubGraphAcrossClusters(t *testing.T) {
	t.Parallel()
	f, h, _ := startHubGraphFleet(t, meshOnly(), linkRGD)
	ctx := context.Background()
	f.createLink(t, "web", "spoke-2")

	t.Run("values flow across clusters and the instance is ACTIVE on the hub", func(t *testing.T) {
		f.requireData(t, "spoke-1", "web-db", map[string]string{"port": "5432"})
		f.requireData(t, "spoke-2", "web-egress", map[string]string{"upstream": "db.default:5432"})
		f.requireData(t, "hub", "web-record", map[string]string{"egress": "web-egress"})
		requireState(t, f.hub, linkGVK, "web", "ACTIVE")
		inst := f.link("web")
		upstream, _, _ := unstructured.NestedString(inst.Object, "status", "upstream")
		assert.Equal(t, "db.default:5432", upstream, "status projects a value read on spoke-2")
		f.assertNoConfigMap(t, "spoke-3", "web-egress", "nothing on spoke-3")
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
		f.setLinkSpec(t, "web", "port", "6000")
		f.requireData(t, "spoke-1", "web-db", map[string]string{"port": "6000"})
		f.requireData(t, "spoke-2", "web-egress", map[string]string{"upstream": "db.default:6000"})
	})

	t.Run("drift on spoke-2 is repaired", func(t *testing.T) {
		f.updateConfigMap(t, "spoke-2", "web-egress", func(cm *corev1.ConfigMap) { cm.Data["upstream"] = "somewhere-else" })
		f.requireData(t, "spoke-2", "web-egress", map[string]string{"upstream": "db.default:6000"})
	})

	t.Run("a retargeted resource moves and its old child is pruned", func(t *testing.T) {
		f.createLink(t, "move", "spoke-2")
		f.requireData(t, "spoke-2", "move-egress", map[string]string{"upstream": "db.default:5432"})
		f.setLinkSpec(t, "move", "egressCluster", "spoke-1")
		f.requireData(t, "spoke-1", "move-egress", map[string]string{"upstream": "db.default:5432"})
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			f.assertNoConfigMap(ct, "spoke-2", "move-egress", "the child left behind on spoke-2 is pruned")
		}, wait, tick)
		f.deleteLink(t, "move")
	})

	t.Run("what is not ours is never written or deleted", func(t *testing.T) {
		squat := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "squat-egress"}, Data: map[string]string{"owner": "someone"}}
		require.NoError(t, f.spokes["spoke-2"].Create(ctx, squat))
		f.createLink(t, "squat", "spoke-2")
		requireSays(t, f.hub, linkGVK, "squat", instanceSays{Condition: "Ready", Message: []string{"squat-egress", "not ours"}})
		f.deleteLink(t, "squat")
		cm, err := f.configMap("spoke-2", "squat-egress")
		require.NoError(t, err, "deleting the instance leaves the object it did not own")
		assert.Equal(t, map[string]string{"owner": "someone"}, cm.Data)
		assert.Empty(t, cm.Labels)
		f.assertNoConfigMap(t, "spoke-1", "squat-db", "its own child is deleted")
	})

	t.Run("a cluster outside the allowed set is refused before any write", func(t *testing.T) {
		for name, egress := range map[string]string{"evil": "spoke-3", "lost": "no-such-cluster"} {
			f.createLink(t, name, egress)
			u := requireSays(t, f.hub, linkGVK, name, instanceSays{
				State: "ERROR", Condition: "TargetsAllowed", Status: "False",
				Message: []string{`resource "egress"`, fmt.Sprintf("cluster %q", egress)},
			})
			t.Logf("%s: %v", name, condition(u, "TargetsAllowed")["message"])
			f.requireNowhere(t, name)
			assert.Empty(t, f.link(name).GetFinalizers(), "a refused instance holds no finalizer")
		}
	})

	t.Run("deletion goes in reverse DAG order across clusters", func(t *testing.T) {
		// Hold egress (spoke-2) with a finalizer of our own: record (hub)
		// must go first, and db (spoke-1) only once egress is gone.
		const hold = "test.fleetgraph.dev/hold"
		f.updateConfigMap(t, "spoke-2", "web-egress", func(cm *corev1.ConfigMap) { cm.Finalizers = append(cm.Finalizers, hold) })
		require.NoError(t, f.hub.Delete(ctx, f.link("web")))

		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			f.assertNoConfigMap(ct, "hub", "web-record", "record on the hub goes first")
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

		f.updateConfigMap(t, "spoke-2", "web-egress", func(cm *corev1.ConfigMap) { cm.Finalizers = nil })
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Nil(ct, f.link("web"), "the instance is gone once its children are")
			f.assertNoConfigMap(ct, "spoke-1", "web-db", "db on spoke-1 deleted last")
		}, wait, tick)
		f.requireNowhere(t, "web")
	})

	t.Run("deletion waits for a target that left the fleet and says so", func(t *testing.T) {
		f.createLink(t, "far", "spoke-2")
		f.requireData(t, "spoke-2", "far-egress", map[string]string{"upstream": "db.default:5432"})
		requireState(t, f.hub, linkGVK, "far", "ACTIVE")
		kubeconfig := f.removeKubeconfig(t, "spoke-2")
		require.NoError(t, f.hub.Delete(ctx, f.link("far")))

		requireSays(t, f.hub, linkGVK, "far", instanceSays{State: "DELETING", Condition: "Ready", Message: []string{"unreachable", `"spoke-2"`}})
		f.assertNoConfigMap(t, "hub", "far-record", "the wave before spoke-2's went")
		db, err := f.configMap("spoke-1", "far-db")
		require.NoError(t, err, "the wave after spoke-2's waits")
		assert.Nil(t, db.DeletionTimestamp)

		// spoke-2 comes back: the deletion finishes there and on spoke-1.
		kubeconfig.ResourceVersion, kubeconfig.UID = "", ""
		require.NoError(t, f.hub.Create(ctx, kubeconfig))
		f.requireLinkGone(t, "far", wait)
		f.requireNowhere(t, "far")
	})
}

// Under Strict, a graph with a target is refused, naming target.
func TestStrictHubRefusesTargets(t *testing.T) {
	t.Parallel()
	h, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Compile: sdk.CompileOptions{Strict: true}})
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
	f, _, stop := startHubGraphFleet(t, meshOnly(), linkRGD)
	ctx := context.Background()
	f.createLink(t, "r0", "spoke-2")
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
	registerGraphs(t, h2, linkRGD)
	for i := range n {
		requireState(t, f.hub, linkGVK, fmt.Sprintf("r%d", i), "ACTIVE")
	}
	count := func(cluster string) int { return len(f.children(t, cluster, "link")) }
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
		perUID := map[string]int{}
		for _, cm := range f.children(t, c, "link") {
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
	f, h, _ := startHubGraphFleet(t, opts, linkRGD)
	f.activeLink(t, "web", "spoke-2")
	frozen := f.freeze(t, "spoke-2")

	// The instance's resource on spoke-1 follows an update.
	start := time.Now()
	f.setLinkSpec(t, "web", "port", "7000")
	f.requireData(t, "spoke-1", "web-db", map[string]string{"port": "7000"})
	t.Logf("spoke-1's child followed the update %v after it, spoke-2 frozen (call timeout %v)", time.Since(start).Round(time.Millisecond), opts.Targets.CallTimeout)
	requireSays(t, f.hub, linkGVK, "web", instanceSays{Condition: "ResourcesReady", Reason: "ClusterUnreachable", Message: []string{`cluster "spoke-2" is unreachable`}})
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
	f.activeLink(t, "calm", "spoke-1")
	t.Logf("an instance on spoke-1 and the hub became ACTIVE in %v while spoke-2 was frozen", time.Since(start).Round(time.Millisecond))

	require.NoError(t, frozen.Resume())
	f.requireData(t, "spoke-2", "web-egress", map[string]string{"upstream": "db.default:7000"})
	requireState(t, f.hub, linkGVK, "web", "ACTIVE")
	assert.Len(t, f.children(t, "spoke-2", "link"), 1, "spoke-2 holds web's egress once")
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
	f, _, _ := startHubGraphFleet(t, meshOnly(), meshRGD)
	ctx := context.Background()
	createWhenServed(t, f.hub, instance(meshGVK, "m", map[string]any{}))
	gateways := func(want map[string]string) {
		t.Helper()
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			for _, c := range []string{"spoke-1", "spoke-2", "spoke-3"} {
				items := f.children(ct, c, "mesh")
				peers, ok := want[c]
				if !ok {
					assert.Empty(ct, items, "no gateway in %s", c)
					continue
				}
				if assert.Len(ct, items, 1, "one gateway in %s", c) {
					assert.Equal(ct, "m-gateway-"+c, items[0].Name)
					assert.Equal(ct, peers, items[0].Data["peers"], "peers of %s", c)
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
	opts.RGDs.DisableController, opts.RGDs.InstallCRD = false, true
	opts.Instances.ConfineToNamespace = true
	opts.CRDs.DeleteOnUnregister = true
	f, h, _ := startHubGraphFleet(t, opts)
	ctx := context.Background()

	// Confined, a child rendered in another namespace of a target cluster
	// is not written.
	escape := strings.ReplaceAll(strings.ReplaceAll(linkRGD, "name: link", "name: escape"), "kind: Link", "kind: Escape")
	escape = strings.Replace(escape, "name: ${schema.metadata.name}-egress", "name: ${schema.metadata.name}-egress\n        namespace: kube-system", 1)
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, escape)))
	escapeGVK := schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Escape"}
	createWhenServed(t, f.hub, instance(escapeGVK, "out", map[string]any{"egressCluster": "spoke-2"}))
	requireSays(t, f.hub, escapeGVK, "out", instanceSays{Condition: "ResourcesReady", Reason: "OutsideNamespace", Message: []string{"kube-system"}})
	err := f.spokes["spoke-2"].Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "out-egress"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "nothing written outside the namespace: %v", err)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		rgd := rgdFromString(t, linkRGD)
		assert.NoError(ct, client.IgnoreAlreadyExists(f.hub.Create(ctx, rgd)))
	}, wait, tick, "the hub serves RGDs")
	f.createLink(t, "obj", "spoke-2")
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
	// deleted; then the CRD leaves the hub (CRDs.DeleteOnUnregister), and
	// the RGD goes.
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
	linkCRD := func() error {
		return f.hub.Get(ctx, client.ObjectKey{Name: crdName(linkGVK)}, &apiextensionsv1.CustomResourceDefinition{})
	}
	require.Eventually(t, func() bool { return apierrors.IsNotFound(linkCRD()) }, wait, tick, "the hub graph's CRD leaves the hub with its RGD")

	// With the orphan annotation, the instance is released: our finalizer
	// goes, its children stay.
	orphan := rgdFromString(t, linkRGD)
	orphan.Annotations = map[string]string{v1alpha1.AnnotationOrphanInstances: "true"}
	require.NoError(t, f.hub.Create(ctx, orphan))
	f.activeLink(t, "kept", "spoke-2")
	require.NoError(t, f.hub.Delete(ctx, orphan))
	rgdGone()
	u := f.link("kept")
	require.NotNil(t, u)
	assert.NotContains(t, u.GetFinalizers(), "fleetgraph.dev/finalizer")
	assert.NoError(t, linkCRD(), "a released instance keeps its CRD")
	for cluster, name := range map[string]string{"spoke-1": "kept-db", "spoke-2": "kept-egress", "hub": "kept-record"} {
		_, err := f.configMap(cluster, name)
		assert.NoError(t, err, "%s stays in %s", name, cluster)
	}
}
