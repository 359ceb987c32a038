//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/hubgraph"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// hubStampName is the name of the hub graph's admission policy and binding
// for gvk (hubgraph.StampPolicyName).
func hubStampName(gvk schema.GroupVersionKind) string {
	return "fleetgraph-hub." + crdName(gvk)
}

// requireStamping waits until a dry-run create of an instance of gvk on
// the hub comes back stamped: the policy is bound and the API server runs
// it.
func requireStamping(t testing.TB, hub client.Client, gvk schema.GroupVersionKind, ns string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		probe := instance(gvk, "stamp-probe", map[string]any{})
		probe.SetNamespace(ns)
		require.NoError(ct, hub.Create(context.Background(), probe, client.DryRunAll))
		assert.Contains(ct, probe.GetFinalizers(), contract.Finalizer)
	}, wait, tick, "new %s instances are stamped at admission on the hub", gvk.Kind)
}

// policyGone reports whether the hub graph's policy and binding for gvk
// are both absent from the hub.
func policyGone(hub client.Client, gvk schema.GroupVersionKind) bool {
	ctx := context.Background()
	name := client.ObjectKey{Name: hubStampName(gvk)}
	errP := hub.Get(ctx, name, &admissionv1.MutatingAdmissionPolicy{})
	errB := hub.Get(ctx, name, &admissionv1.MutatingAdmissionPolicyBinding{})
	return apierrors.IsNotFound(errP) && apierrors.IsNotFound(errB)
}

// A hub graph's new instances carry the finalizer and their literal
// targets' clusters from their first version, stamped on the hub by an
// admission policy, so the hub writes nothing of them before their
// children: each costs one apply per child and one status write, 3
// requests. Deletion still cleans both spokes, and unregistering the
// graph takes the policy off the hub.
func TestHubGraphInstancesStampedAtAdmission(t *testing.T) {
	t.Parallel()
	const pairs = 6
	ctx := context.Background()
	fleet := sharedFleet(t)
	writes := countWrites()
	provider := fgtesting.NewProvider()
	spokes := map[string]client.Client{}
	for _, s := range fleet.Spokes() {
		require.NoError(t, provider.AddConfig(ctx, s.Name, writes.config(s.Config, s.Name)))
		spokes[s.Name] = newClient(t, s.Config)
	}
	rgd, gvk := renamedRGD(rgdFromString(t, pairRGD), "stamp-pair", "StampPair")
	h := startHub(t, writes.config(fleet.Hub.Config, "hub"), provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, h.RegisterGraph(ctx, rgd))
	hub := newClient(t, fleet.Hub.Config)
	ns := "stamp-pairs"
	for _, c := range []client.Client{hub, spokes["spoke-1"], spokes["spoke-2"]} {
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	}
	requireStamping(t, hub, gvk, ns)

	for i := range pairs {
		p := instance(gvk, fmt.Sprintf("p%d", i), map[string]any{"value": "v"})
		p.SetNamespace(ns)
		require.NoError(t, hub.Create(ctx, p))
		// The create's answer is the instance's first version.
		assert.Contains(t, p.GetFinalizers(), contract.Finalizer, "p%d's first version holds the finalizer", i)
		assert.JSONEq(t, `["","spoke-1","spoke-2"]`, p.GetAnnotations()[hubgraph.AnnotationClusters], "p%d's first version names its clusters", i)
	}
	require.Eventually(t, func() bool { return activePairs(hub, gvk, ns) == pairs }, wait, tick, "all Pairs ACTIVE")

	total := 0
	for _, p := range stampPairPaths(gvk, ns, pairs) {
		n := writes.get(p.cluster, p.path)
		total += n
		if p.cluster == "hub" && !strings.HasSuffix(p.path, "/status") {
			assert.Zero(t, n, "%s %s: a stamped instance's metadata is not written", p.cluster, p.path)
		}
	}
	assert.Equal(t, 3*pairs, total, "requests per instance: an apply per child and a status write")

	// Deletion goes through the stamped finalizer and clears both spokes.
	victim := instance(gvk, "p0", nil)
	victim.SetNamespace(ns)
	require.NoError(t, hub.Delete(ctx, victim))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.True(ct, apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(victim), victim.DeepCopy())), "p0 gone")
		for name, c := range map[string]client.Client{"p0-left": spokes["spoke-1"], "p0-right": spokes["spoke-2"]} {
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
			assert.True(ct, apierrors.IsNotFound(err), "%s gone: %v", name, err)
		}
	}, wait, tick)

	// Unregistering the graph takes the policy off first: a new instance
	// is no longer stamped, so it holds nothing.
	for i := 1; i < pairs; i++ {
		p := instance(gvk, fmt.Sprintf("p%d", i), nil)
		p.SetNamespace(ns)
		require.NoError(t, hub.Delete(ctx, p))
	}
	require.NoError(t, h.UnregisterGraph(ctx, rgd.Name))
	require.Eventually(t, func() bool { return policyGone(hub, gvk) }, wait, tick, "the policy leaves the hub with the graph")
}

// stampPairPaths are the paths the hub writes for n Pairs of kind gvk:
// each Pair's metadata and status on the hub, and its two children.
func stampPairPaths(gvk schema.GroupVersionKind, ns string, n int) []clusterPath {
	var out []clusterPath
	for i := range n {
		pair := fmt.Sprintf("/apis/%s/%s/namespaces/%s/%ss/p%d", gvk.Group, gvk.Version, ns, strings.ToLower(gvk.Kind), i)
		out = append(out,
			clusterPath{"hub", pair}, clusterPath{"hub", pair + "/status"},
			clusterPath{"spoke-1", childPath(ns, fmt.Sprintf("p%d-left", i))},
			clusterPath{"spoke-2", childPath(ns, fmt.Sprintf("p%d-right", i))})
	}
	return out
}

// Without the policy (here disabled; the same path serves a hub whose API
// server lacks MutatingAdmissionPolicy, or before the policy is bound),
// the hub writes the finalizer and clusters itself before any child: a
// new instance arrives bare and costs one write more.
func TestHubGraphWithoutTheStampWritesTheFinalizerItself(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := sharedFleet(t)
	writes := countWrites()
	provider := fgtesting.NewProvider()
	for _, s := range fleet.Spokes() {
		require.NoError(t, provider.AddConfig(ctx, s.Name, writes.config(s.Config, s.Name)))
	}
	rgd, gvk := renamedRGD(rgdFromString(t, pairRGD), "bare-pair", "BarePair")
	h := startHub(t, writes.config(fleet.Hub.Config, "hub"), provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, CRDs: sdk.CRDOptions{DisableAdmissionPolicy: true}})
	require.NoError(t, h.RegisterGraph(ctx, rgd))
	hub := newClient(t, fleet.Hub.Config)
	p := instance(gvk, "bare", map[string]any{"value": "v"})
	createWhenServed(t, hub, p)
	requireState(t, hub, gvk, "bare", "ACTIVE")

	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(gvk)
	require.NoError(t, hub.Get(ctx, client.ObjectKeyFromObject(p), got))
	assert.Contains(t, got.GetFinalizers(), contract.Finalizer)
	assert.JSONEq(t, `["","spoke-1","spoke-2"]`, got.GetAnnotations()[hubgraph.AnnotationClusters])
	path := fmt.Sprintf("/apis/%s/%s/namespaces/default/%s/bare", gvk.Group, gvk.Version, "barepairs")
	assert.Equal(t, 1, writes.get("hub", path), "the hub wrote the finalizer and clusters")
	assert.True(t, policyGone(hub, gvk), "no policy is installed when disabled")
}

// An update that changes a hub graph's literal targets changes what new
// instances are stamped with; one that removes its targets makes it a
// graph like any other: its policy goes from the hub, so new instances
// there are no longer stamped with a finalizer that nothing would release.
func TestHubGraphStampFollowsItsTargets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := sharedFleet(t)
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	rgd, gvk := renamedRGD(rgdFromString(t, pairRGD), "lose-pair", "LosePair")
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, h.RegisterGraph(ctx, rgd))
	hub := newClient(t, fleet.Hub.Config)
	stampedWith := func(clusters string) {
		t.Helper()
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			probe := instance(gvk, "stamp-probe", map[string]any{})
			require.NoError(ct, hub.Create(ctx, probe, client.DryRunAll))
			assert.Contains(ct, probe.GetFinalizers(), contract.Finalizer)
			assert.Equal(ct, clusters, probe.GetAnnotations()[hubgraph.AnnotationClusters])
		}, wait, tick, "stamped with %s", clusters)
	}
	stampedWith(`["","spoke-1","spoke-2"]`)

	moved := rgd.DeepCopy()
	moved.Generation = 2
	for i := range moved.Spec.Resources {
		moved.Spec.Resources[i].Target.Cluster.Name = "spoke-1"
	}
	require.NoError(t, h.RegisterGraph(ctx, moved))
	stampedWith(`["","spoke-1"]`)

	plain := rgd.DeepCopy()
	plain.Generation = 3
	for i := range plain.Spec.Resources {
		plain.Spec.Resources[i].Target = nil
	}
	require.NoError(t, h.RegisterGraph(ctx, plain))
	require.Eventually(t, func() bool { return policyGone(hub, gvk) }, wait, tick, "the policy leaves the hub with the targets")
}
