//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// watchedRGD renders a ConfigMap from the instance and an external Secret.
const watchedRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: watched
spec:
  schema:
    apiVersion: v1alpha1
    kind: Watched
    spec:
      value: string | default="a"
  resources:
  - id: settings
    externalRef:
      apiVersion: v1
      kind: Secret
      metadata:
        name: settings
  - id: copy
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-copy
      data:
        value: ${schema.spec.value}
        from: ${settings.metadata.name}
`

// hubRoles gives user what the runtime needs to serve g's instances of
// a ConfigMap from an external Secret, except list and watch of ConfigMaps
// and Secrets, which the returned binding grants (delete it to revoke
// them).
func hubRoles(t *testing.T, c client.Client, g *graph.Graph, user string) *rbacv1.ClusterRoleBinding {
	t.Helper()
	ctx := context.Background()
	all := []string{"*"}
	base := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "hub-base"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: all},
		{APIGroups: []string{"events.k8s.io"}, Resources: all, Verbs: all},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: all, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{g.Instance.GVK.Group}, Resources: all, Verbs: all},
	}}
	watch := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "hub-watch"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"list", "watch"}},
	}}
	for _, r := range []*rbacv1.ClusterRole{base, watch} {
		require.NoError(t, c.Create(ctx, r))
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	require.NoError(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hub-base"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: base.Name},
	}))
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hub-watch"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: watch.Name},
	}
	require.NoError(t, c.Create(ctx, binding.DeepCopy()))
	return binding
}

// watchSeries returns the value of the named per-cluster watch metric for
// cluster and kind, and whether the series exists.
func watchSeries(t *testing.T, name, cluster, kind string) (float64, bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["cluster"] == cluster && labels["kind"] == kind {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// watchedCondition returns the instance's ResourcesWatched condition, nil
// if it has none.
func watchedCondition(u *unstructured.Unstructured) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if cm, ok := c.(map[string]any); ok && cm["type"] == instance.ConditionResourcesWatched {
			return cm
		}
	}
	return nil
}

// The hub loses list and watch of ConfigMaps and Secrets, the kinds of the
// graph's child and external reference, while the instance is served: once
// the watches are opened again (here: the connection drops) they fail in
// the background. The failures are counted, the instance says which
// watches fail and why, and it stops saying so once the role is back.
func TestAFailingWatchShowsInStatusAndMetrics(t *testing.T) {
	t.Parallel()
	fleet := sharedFleet(t)
	ctx := context.Background()
	const ns = "watched"
	g := compile(t, watchedRGD)
	s := fleet.Spokes()[0]
	admin := newClient(t, s.Config)
	installCRD(t, admin, g)
	createNamespace(t, admin, ns)
	secret := &unstructured.Unstructured{}
	secret.SetAPIVersion("v1")
	secret.SetKind("Secret")
	secret.SetNamespace(ns)
	secret.SetName("settings")
	require.NoError(t, admin.Create(ctx, secret))
	binding := hubRoles(t, admin, g, "fleetgraph-hub")
	hubCfg, _, err := s.AddUser("fleetgraph-hub")
	require.NoError(t, err)
	proxy, viaProxy := fgtesting.StartProxy(t, hubCfg)
	// The cluster's name is the test's own: the metrics are keyed by it.
	const cluster = ns + "-through-proxy"
	provider := fgtesting.NewProvider()
	require.NoError(t, provider.AddConfig(ctx, cluster, viaProxy))
	rt := startRuntime(t, fleet, provider, spoke.Config{})
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))

	require.NoError(t, admin.Create(ctx, newInstance(g, ns, "a", map[string]any{})))
	stateIs(t, admin, g, ns, "a", contract.StateActive)
	const counter, gauge = "fleetgraph_spoke_watch_errors_total", "fleetgraph_spoke_watches_failing"
	kinds := []string{"v1/ConfigMap", "v1/Secret"}
	before := map[string]float64{}
	for _, k := range kinds {
		before[k], _ = watchSeries(t, counter, cluster, k)
	}

	require.NoError(t, admin.Delete(ctx, binding.DeepCopy()))
	hub := newClient(t, hubCfg)
	eventually(t, func() (bool, string) { // RBAC changes reach the authorizer through a watch
		cms, secrets := &metav1.PartialObjectMetadataList{}, &metav1.PartialObjectMetadataList{}
		cms.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMapList"})
		secrets.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "SecretList"})
		errCMs, errSecrets := hub.List(ctx, cms), hub.List(ctx, secrets)
		return apierrors.IsForbidden(errCMs) && apierrors.IsForbidden(errSecrets), fmt.Sprintf("lists: %v, %v", errCMs, errSecrets)
	})
	proxy.Reset()
	revoked := time.Now()
	eventually(t, func() (bool, string) {
		u, err := getInstance(t, admin, g, ns, "a")
		if err != nil {
			return false, err.Error()
		}
		c := watchedCondition(u)
		msg, _ := c["message"].(string)
		named := c != nil && c["status"] == "False" && strings.Count(msg, "forbidden") >= 2
		for _, k := range kinds {
			named = named && strings.Contains(msg, k)
		}
		var series []string
		for _, k := range kinds {
			n, _ := watchSeries(t, counter, cluster, k)
			f, _ := watchSeries(t, gauge, cluster, k)
			series = append(series, fmt.Sprintf("%s: %v errors, failing %v", k, n, f))
		}
		return named, fmt.Sprintf("conditions %v; %v", u.Object["status"], series)
	})
	for _, k := range kinds {
		n, _ := watchSeries(t, counter, cluster, k)
		require.Greater(t, n, before[k], "failed calls of %s are counted", k)
		failing, ok := watchSeries(t, gauge, cluster, k)
		require.True(t, ok)
		require.Equal(t, 1.0, failing, "%s failing", k)
	}
	u, err := getInstance(t, admin, g, ns, "a")
	require.NoError(t, err)
	state, _, _ := unstructured.NestedString(u.Object, "status", "state")
	require.Equal(t, contract.StateActive, state, "the children are fine; only their changes are unseen")

	seen := time.Since(revoked)
	require.NoError(t, admin.Create(ctx, binding.DeepCopy()))
	restored := time.Now()
	eventually(t, func() (bool, string) {
		u, err := getInstance(t, admin, g, ns, "a")
		if err != nil {
			return false, err.Error()
		}
		return watchedCondition(u) == nil, fmt.Sprintf("conditions %v", u.Object["status"])
	})
	t.Logf("failure shown %s after the watches reopened; cleared %s after the role came back", seen, time.Since(restored))
	for _, k := range kinds {
		failing, _ := watchSeries(t, gauge, cluster, k)
		require.Zero(t, failing, "%s failing", k)
	}

	// Drift is seen again: a child changed behind the hub's back is put back.
	cm, err := configMap(admin, ns, "a-copy")
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(cm.Object, "drifted", "data", "value"))
	require.NoError(t, admin.Update(ctx, cm))
	configMapData(t, admin, ns, "a-copy", "value", "a")
}
