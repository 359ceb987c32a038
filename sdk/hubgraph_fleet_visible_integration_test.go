//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

var censusGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Census"}

// censusRGD writes, on the hub, every cluster fleet.clusters shows it
// (name=mesh label), beside a probe on the cluster the instance names.
const censusRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: census
spec:
  schema:
    apiVersion: v1alpha1
    kind: Census
    spec:
      home: string
  resources:
  - id: probe
    target:
      cluster:
        name: ${schema.spec.home}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-probe
      data:
        home: ${schema.spec.home}
  - id: record
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-census
      data:
        seen: ${fleet.clusters.map(c, c.name + "=" + c.labels.?mesh.orValue("")).join(",")}
`

// tenantClusters is a platform's tie of tenants to clusters, through
// Options.Targets.Allow: an instance in a namespace the table names may
// use only the clusters listed for it; other namespaces may use the whole
// allowed set (AllowedClusters).
func tenantClusters(table map[string][]string) func(context.Context, *graph.Graph, *unstructured.Unstructured, string) error {
	return func(_ context.Context, _ *graph.Graph, inst *unstructured.Unstructured, cluster string) error {
		mine, ok := table[inst.GetNamespace()]
		if !ok {
			return nil
		}
		for _, c := range mine {
			if c == cluster {
				return nil
			}
		}
		return fmt.Errorf("namespace %s may use only %v", inst.GetNamespace(), mine)
	}
}

// fleet.clusters shows a hub graph only the clusters its instance may
// use: spoke-3, outside the platform's AllowedClusters (mesh=true), is
// never shown; an instance in tenant-a, tied by the platform's Allow hook
// to spoke-1, sees spoke-1 alone. The same hook refuses tenant-a's
// instance that targets spoke-2 before anything is written there, while
// default's instance writes there.
func TestHubGraphFleetShowsOnlyAllowedClusters(t *testing.T) {
	t.Parallel()
	opts := meshOnly()
	opts.Targets.Allow = tenantClusters(map[string][]string{"tenant-a": {"spoke-1"}})
	f, _, _ := startHubGraphFleet(t, opts, censusRGD, linkRGD)
	ctx := context.Background()
	for _, c := range f.clients {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}))
	}
	census := func(ns, name string) *unstructured.Unstructured {
		u := instance(censusGVK, name, map[string]any{"home": "spoke-1"})
		u.SetNamespace(ns)
		return u
	}
	seen := func(ns, name string) string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			require.NoError(ct, f.hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-census"}, cm))
		}, wait, tick)
		return cm.Data["seen"]
	}

	createWhenServed(t, f.hub, census("default", "wide"))
	createWhenServed(t, f.hub, census("tenant-a", "narrow"))
	assert.Equal(t, "spoke-1=true,spoke-2=true", seen("default", "wide"), "spoke-3 is outside AllowedClusters")
	assert.Equal(t, "spoke-1=true", seen("tenant-a", "narrow"), "tenant-a may use spoke-1 only")

	t.Run("a relabel into the allowed set shows the cluster", func(t *testing.T) {
		relabel(t, f.hub, "spoke-3", map[string]string{secret.LabelPrefix + "mesh": "true"})
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			cm := &corev1.ConfigMap{}
			require.NoError(ct, f.hub.Get(ctx, client.ObjectKey{Namespace: "default", Name: "wide-census"}, cm))
			assert.Equal(ct, "spoke-1=true,spoke-2=true,spoke-3=true", cm.Data["seen"])
		}, wait, tick)
		assert.Equal(t, "spoke-1=true", seen("tenant-a", "narrow"), "still spoke-1 alone for tenant-a")
	})

	t.Run("a tenant cannot target another tenant's cluster", func(t *testing.T) {
		u := instance(linkGVK, "reach", map[string]any{"egressCluster": "spoke-2"})
		u.SetNamespace("tenant-a")
		createWhenServed(t, f.hub, u)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(linkGVK)
			require.NoError(ct, f.hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "reach"}, got))
			s, _, _ := unstructured.NestedString(got.Object, "status", "state")
			assert.Equal(ct, "ERROR", s)
			cond := condition(got, "TargetsAllowed")
			require.NotNil(ct, cond)
			assert.Equal(ct, "False", cond["status"])
			assert.Contains(ct, cond["message"], `cluster "spoke-2"`)
			assert.Contains(ct, cond["message"], "namespace tenant-a may use only [spoke-1]")
		}, wait, tick)
		for _, name := range []string{"reach-db", "reach-egress"} {
			for _, c := range []string{"spoke-1", "spoke-2"} {
				err := f.clients[c].Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: name}, &corev1.ConfigMap{})
				assert.True(t, apierrors.IsNotFound(err), "nothing of a refused instance is written: %s in %s: %v", name, c, err)
			}
		}
		f.activeLink(t, "reach", "spoke-2") // default's instance may
	})
}
