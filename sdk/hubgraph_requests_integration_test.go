//go:build integration

package sdk_test

import (
	"context"
	"fmt"
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

	"github.com/fleetgraph/fleetgraph/sdk"
)

// The hub's own writes do not bring an instance back: the echo of its
// finalizer and status writes on the hub and of its applies on the spokes
// requeue nothing, and a child that did not change is not applied again.
// Each new Pair costs one apply per child, at most one metadata write
// (finalizer and clusters; none once the hub's admission policy stamps
// them, TestHubGraphInstancesStampedAtAdmission) and one status write, and
// nothing more while it stays ACTIVE. Drift, a deleted child and an update are still followed, each
// with one apply per child it concerns.
func TestHubGraphOwnWritesRequeueNothing(t *testing.T) {
	t.Parallel()
	const pairs = 10
	ctx := context.Background()
	writes := countWrites()
	s := startSharedHubGraph(t, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}}, writes.config)
	hub, spokes := s.hub, s.spokes
	rgd, gvk := renamedRGD(rgdFromString(t, pairRGD), "echo-pair", "EchoPair")
	require.NoError(t, s.h.RegisterGraph(ctx, rgd))
	ns := "echo-pairs"
	s.createNamespace(t, ns)
	for i := range pairs {
		p := instance(gvk, fmt.Sprintf("p%d", i), map[string]any{"value": "v"})
		p.SetNamespace(ns)
		createWhenServed(t, hub, p)
	}
	require.Eventually(t, func() bool { return activePairs(hub, gvk, ns) == pairs }, wait, tick, "all Pairs ACTIVE")

	paths := pairPaths(gvk, ns, pairs)
	// Nothing the hub wrote brings a Pair back: for longer than the
	// requeue of a waiting instance (2 s), nothing is written again.
	exceeded := func() string {
		for _, p := range paths {
			if n := writes.get(p.cluster, p.path); n > 1 {
				return fmt.Sprintf("%s %s written %d times", p.cluster, p.path, n)
			}
		}
		return ""
	}
	assert.Never(t, func() bool { return exceeded() != "" }, 3*time.Second, tick, "a write was repeated")
	require.Empty(t, exceeded(), "the write repeated")

	// Drift on spoke-2 is put back, with one more apply of that child.
	cm := &corev1.ConfigMap{}
	require.NoError(t, spokes["spoke-2"].Get(ctx, client.ObjectKey{Namespace: ns, Name: "p0-right"}, cm))
	cm.Data["value"] = "drifted"
	require.NoError(t, spokes["spoke-2"].Update(ctx, cm))
	requirePairValue(t, spokes["spoke-2"], ns, "p0-right", "v")
	// A child deleted on spoke-1 is written again.
	require.NoError(t, spokes["spoke-1"].Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p1-left"}}))
	requirePairValue(t, spokes["spoke-1"], ns, "p1-left", "v")
	// An update reaches both children.
	p := &unstructured.Unstructured{}
	p.SetGroupVersionKind(gvk)
	require.NoError(t, hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p2"}, p))
	require.NoError(t, unstructured.SetNestedField(p.Object, "w", "spec", "value"))
	require.NoError(t, hub.Update(ctx, p))
	requirePairValue(t, spokes["spoke-1"], ns, "p2-left", "w")
	requirePairValue(t, spokes["spoke-2"], ns, "p2-right", "w")

	// The update also changes p2's conditions' observedGeneration.
	changed := map[string]int{"spoke-2 " + childPath(ns, "p0-right"): 2, "spoke-1 " + childPath(ns, "p1-left"): 2,
		"spoke-1 " + childPath(ns, "p2-left"): 2, "spoke-2 " + childPath(ns, "p2-right"): 2,
		"hub " + paths[2*4+1].path: 2}
	require.Never(t, func() bool {
		for _, p := range paths {
			if n := writes.get(p.cluster, p.path); n > max(1, changed[p.cluster+" "+p.path]) {
				return true
			}
		}
		return false
	}, 3*time.Second, tick, "a change was followed by more than one apply of each child it concerns")
	for key, want := range changed {
		var cluster, path string
		_, _ = fmt.Sscan(key, &cluster, &path)
		assert.Equal(t, want, writes.get(cluster, path), "applies of %s", key)
	}
}

type clusterPath struct{ cluster, path string }

func childPath(ns, name string) string {
	return fmt.Sprintf("/api/v1/namespaces/%s/configmaps/%s", ns, name)
}

// pairPaths are the paths the hub writes for n Pairs: each Pair's metadata
// and status on the hub, and its two children.
func pairPaths(gvk schema.GroupVersionKind, ns string, n int) []clusterPath {
	var out []clusterPath
	for i := range n {
		pair := fmt.Sprintf("/apis/%s/%s/namespaces/%s/echopairs/p%d", gvk.Group, gvk.Version, ns, i)
		out = append(out,
			clusterPath{"hub", pair}, clusterPath{"hub", pair + "/status"},
			clusterPath{"spoke-1", childPath(ns, fmt.Sprintf("p%d-left", i))},
			clusterPath{"spoke-2", childPath(ns, fmt.Sprintf("p%d-right", i))})
	}
	return out
}

func activePairs(hub client.Client, gvk schema.GroupVersionKind, ns string) int {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := hub.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		return 0
	}
	active := 0
	for _, u := range list.Items {
		if s, _, _ := unstructured.NestedString(u.Object, "status", "state"); s == "ACTIVE" {
			active++
		}
	}
	return active
}

func requirePairValue(t *testing.T, c client.Client, ns, name, value string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cm := &corev1.ConfigMap{}
		require.NoError(ct, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm))
		assert.Equal(ct, value, cm.Data["value"])
	}, wait, tick, "%s/%s has value %q", ns, name, value)
}

// gateRGD is a hub graph whose second resource waits on the readiness of
// the first, in another cluster: gate (spoke-1) is ready once somebody
// else annotates it ready=yes; after (spoke-2) reads it.
const gateRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: gate
spec:
  schema:
    apiVersion: v1alpha1
    kind: Gate
    spec:
      value: string | default="v"
  resources:
  - id: gate
    target: {cluster: {name: spoke-1}}
    readyWhen:
    - ${gate.metadata.?annotations["ready"].orValue("") == "yes"}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-gate
      data:
        value: ${schema.spec.value}
  - id: after
    target: {cluster: {name: spoke-2}}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-after
      data:
        gate: ${gate.metadata.name}
`

// An instance waiting on the readiness of a resource in another cluster
// comes back when that resource becomes ready, although the echoes of its
// own writes (its IN_PROGRESS status, its applies) requeue nothing.
func TestHubGraphWaitsOnARemoteDependency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startSharedHubGraph(t, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}}, nil)
	hub, spokes := s.hub, s.spokes
	rgd, gvk := renamedRGD(rgdFromString(t, gateRGD), "wait-gate", "WaitGate")
	require.NoError(t, s.h.RegisterGraph(ctx, rgd))
	createWhenServed(t, hub, instance(gvk, "waitg", map[string]any{}))

	gate := &corev1.ConfigMap{}
	require.Eventually(t, func() bool {
		return spokes["spoke-1"].Get(ctx, client.ObjectKey{Namespace: "default", Name: "waitg-gate"}, gate) == nil
	}, wait, tick, "the gate written on spoke-1")
	requireState(t, hub, gvk, "waitg", "IN_PROGRESS")
	err := spokes["spoke-2"].Get(ctx, client.ObjectKey{Namespace: "default", Name: "waitg-after"}, &corev1.ConfigMap{})
	require.True(t, apierrors.IsNotFound(err), "after waits for the gate: %v", err)

	gate.Annotations = map[string]string{"ready": "yes"}
	require.NoError(t, spokes["spoke-1"].Update(ctx, gate))
	requireState(t, hub, gvk, "waitg", "ACTIVE")
	data, err := configMapData(spokes["spoke-2"], "waitg-after")
	require.NoError(t, err)
	assert.Equal(t, "waitg-gate", data["gate"])
}
