//go:build integration

package sdk_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/spoke"
)

var feedGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Feed"}

// feedRGD reads, on spoke-1, one ConfigMap by name and the ConfigMaps
// labelled for the instance by selector, and copies what it read into a
// child on spoke-2.
const feedRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: feed
spec:
  schema:
    apiVersion: v1alpha1
    kind: Feed
    spec:
      source: string
      sourceNamespace: string | default="default"
  resources:
  - id: source
    target:
      cluster:
        name: spoke-1
    externalRef:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.spec.source}
        namespace: ${schema.spec.sourceNamespace}
  - id: peers
    target:
      cluster:
        name: spoke-1
    externalRef:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        selector:
          matchLabels:
            feed: ${schema.metadata.name}
  - id: copy
    target:
      cluster:
        name: spoke-2
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-copy
      data:
        value: ${source.data.value}
        peers: ${peers.map(p, p.metadata.name).join(",")}
`

// A hub instance reads externalRefs on spoke-1 (by name and by selector)
// and writes what it read on spoke-2. With a resync of an hour, only a
// watch of what the references read can bring a change on spoke-1 to
// spoke-2 within the test's wait: an update of the object read by name,
// an object joining, changing in, leaving (by its labels) and deleted
// from the selection, and an object by name deleted then created again.
// ConfineToNamespace still refuses a reference into another namespace.
func TestHubGraphWatchesExternalRefsInOtherClusters(t *testing.T) {
	t.Parallel()
	opts := meshOnly()
	opts.Instances.Resync = time.Hour
	opts.Instances.ConfineToNamespace = true
	f, h, _ := startHubGraphFleet(t, opts)
	ctx := context.Background()
	spoke1 := f.spokes["spoke-1"]
	source := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "source"}, Data: map[string]string{"value": "v1"}}
	require.NoError(t, spoke1.Create(ctx, source))
	peer := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"feed": "reader"}}}
	}
	require.NoError(t, spoke1.Create(ctx, peer("peer-a")))
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, feedRGD)))
	createWhenServed(t, f.hub, instance(feedGVK, "reader", map[string]any{"source": "source"}))
	f.requireData(t, "spoke-2", "reader-copy", map[string]string{"value": "v1", "peers": "peer-a"})
	requireState(t, f.hub, feedGVK, "reader", "ACTIVE")

	t.Run("an update of the object read by name", func(t *testing.T) {
		f.updateConfigMap(t, "spoke-1", "source", func(cm *corev1.ConfigMap) { cm.Data["value"] = "v2" })
		f.requireData(t, "spoke-2", "reader-copy", map[string]string{"value": "v2", "peers": "peer-a"})
	})

	t.Run("objects joining, leaving and deleted from a selection", func(t *testing.T) {
		require.NoError(t, spoke1.Create(ctx, peer("peer-b")))
		f.requireData(t, "spoke-2", "reader-copy", map[string]string{"value": "v2", "peers": "peer-a,peer-b"})
		f.updateConfigMap(t, "spoke-1", "peer-a", func(cm *corev1.ConfigMap) { cm.Labels = nil })
		f.requireData(t, "spoke-2", "reader-copy", map[string]string{"value": "v2", "peers": "peer-b"})
		require.NoError(t, spoke1.Delete(ctx, peer("peer-b")))
		f.requireData(t, "spoke-2", "reader-copy", map[string]string{"value": "v2", "peers": ""})
	})

	t.Run("the object read by name deleted and created again", func(t *testing.T) {
		require.NoError(t, spoke1.Delete(ctx, source.DeepCopy()))
		requireState(t, f.hub, feedGVK, "reader", "IN_PROGRESS")
		again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "source"}, Data: map[string]string{"value": "v3"}}
		require.NoError(t, spoke1.Create(ctx, again))
		f.requireData(t, "spoke-2", "reader-copy", map[string]string{"value": "v3", "peers": ""})
		requireState(t, f.hub, feedGVK, "reader", "ACTIVE")
	})

	t.Run("a reference outside the instance's namespace is still refused", func(t *testing.T) {
		createWhenServed(t, f.hub, instance(feedGVK, "outsider", map[string]any{"source": "source", "sourceNamespace": "kube-system"}))
		requireSays(t, f.hub, feedGVK, "outsider", instanceSays{Condition: "ResourcesReady", Reason: "OutsideNamespace", Message: []string{"kube-system"}})
		f.assertNoConfigMap(t, "spoke-2", "outsider-copy", "nothing written from a refused reference")
	})
}

// Watching what an externalRef read brings nothing back by itself: an
// ACTIVE reader is not reconciled again until the object changes (no loop
// through its own watch); then it is, and follows it. The reference is
// read from a watch of its own, no wider than it names (the engine's
// scoped informer: a list and a watch of that one object, in its
// namespace), never by a request per reconcile. That the watch's first
// list requeues nothing is TestExternalReadersByName's
// (internal/instance): here the instance's first reconciles hide it.
func TestHubGraphExternalRefWatchEchoesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reads := countReads()
	s := startSharedHubGraph(t, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Instances: spoke.Options{Resync: time.Hour}}, reads.config)
	hub, spokes := s.hub, s.spokes
	rgd, gvk := renamedRGD(rgdFromString(t, feedRGD), "quiet-feed", "QuietFeed")
	ns := "quiet-feeds"
	s.createNamespace(t, ns)
	source := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quiet-source"}, Data: map[string]string{"value": "v1"}}
	require.NoError(t, spokes["spoke-1"].Create(ctx, source))
	require.NoError(t, s.h.RegisterGraph(ctx, rgd))
	reader := instance(gvk, "quiet", map[string]any{"source": "quiet-source", "sourceNamespace": ns})
	reader.SetNamespace(ns)
	createWhenServed(t, hub, reader)
	copyData := func(ct *assert.CollectT) map[string]string {
		cm := &corev1.ConfigMap{}
		require.NoError(ct, spokes["spoke-2"].Get(ctx, client.ObjectKey{Namespace: ns, Name: "quiet-copy"}, cm))
		return cm.Data
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"value": "v1", "peers": ""}, copyData(ct))
		assert.Equal(ct, "ACTIVE", stateIn(hub, gvk, ns, "quiet"))
	}, wait, tick)

	assert.Positive(t, reads.get("spoke-1", "/api/v1/namespaces/"+ns+"/configmaps"), "the reference is listed in its namespace")
	assert.Zero(t, reads.get("spoke-1", "/api/v1/namespaces/"+ns+"/configmaps/quiet-source"), "and never read by a request of its own")
	before := hubGraphReconciles(t, "quiet-feed")
	require.Positive(t, before)
	assert.Never(t, func() bool { return hubGraphReconciles(t, "quiet-feed") != before }, 3*time.Second, tick,
		"an ACTIVE reader is not brought back by its own watch")

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cm := &corev1.ConfigMap{}
		require.NoError(ct, spokes["spoke-1"].Get(ctx, client.ObjectKeyFromObject(source), cm))
		cm.Data["value"] = "v2"
		require.NoError(ct, spokes["spoke-1"].Update(ctx, cm))
	}, wait, tick)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"value": "v2", "peers": ""}, copyData(ct))
	}, wait, tick)
	// The copy is written inside the reconcile; the metric counts it once
	// the reconcile has returned (its status written).
	assert.Eventually(t, func() bool { return hubGraphReconciles(t, "quiet-feed") > before }, wait, tick,
		"the change brought the reader back")
}

// hubGraphReconciles is how many reconciles the controllers of the named
// hub graph have run in this process (controller-runtime's
// controller_runtime_reconcile_total, whose controller label is
// hubgraph-<graph>-<n>).
func hubGraphReconciles(t *testing.T, graphName string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && strings.HasPrefix(l.GetValue(), "hubgraph-"+graphName+"-") {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}
