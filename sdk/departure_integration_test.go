//go:build integration

package sdk_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/providers/secret"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A spoke that leaves the fleet is cleaned up while it can still be
// reached: its admission policy goes and its instances are released, so a
// delete there finishes without the hub, and their children stay.
func TestASpokeThatLeavesTheFleetIsCleanedUp(t *testing.T) {
	t.Parallel()
	const grace = time.Second
	ctx := context.Background()
	gvk := schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "WebApp"}
	fleet := fgtesting.StartFleet(t, 2) // its own: spoke-2 leaves it and is cleaned of what hubs installed there
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Fleet: sdk.FleetOptions{DepartureGrace: grace}})
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "testdata/webapp-rgd.yaml")))
	leaving, staying := newClient(t, fleet.Spoke("spoke-2").Config), newClient(t, fleet.Spoke("spoke-1").Config)
	for _, c := range []client.Client{leaving, staying} {
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"name": "app"}))
		requireState(t, c, gvk, "app", "ACTIVE")
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NotEmpty(ct, policies(ct, c, "webapp"))
		}, wait, tick, "the policy is bound before the spoke leaves")
	}

	t.Run("a spoke that leaves is released", func(t *testing.T) {
		provider.Remove("spoke-2")
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Empty(ct, policies(ct, leaving, "webapp"))
			assert.False(ct, holdsFinalizer(ct, leaving, gvk, "app"))
		}, wait, tick)
		requireDeleted(t, leaving, instance(gvk, "app", nil))
		_, err := configMapData(leaving, "app-config")
		assert.NoError(t, err, "the children of a released instance stay")
		cm := &corev1.ConfigMap{}
		require.NoError(t, leaving.Get(ctx, client.ObjectKey{Namespace: "default", Name: "app-config"}, cm))
		assert.Equal(t, "true", cm.Annotations[contract.AnnotationReleased],
			"marked, so that no orphan collection takes them if the spoke is served again")
	})
	requireState(t, staying, gvk, "app", "ACTIVE")
}

// Rotated credentials re-engage a spoke under the same name: that is no
// departure, and nothing is released or unbound there.
func TestARotatedKubeconfigIsNotADeparture(t *testing.T) {
	t.Parallel()
	// Far shorter than re-engaging a rotated cluster takes (a probe, a new
	// client, a cache to sync): a rotation is told from a departure by the
	// provider still knowing the cluster, not by a race against the clock.
	const grace = 200 * time.Millisecond
	ctx := context.Background()
	gvk := schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "WebApp"}
	fleet := fgtesting.StartFleet(t, 1) // its own: the secret provider reads the hub's Secrets, and a user is added to spoke-1
	s1 := fleet.Spoke("spoke-1")
	hubClient, c := newClient(t, fleet.Hub.Config), newClient(t, s1.Config)

	provider := secret.New(secret.Options{Safety: secret.Safety{AllowLoopback: true}}) // the fleet is on 127.0.0.1
	h, err := sdk.NewHub(provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Fleet: sdk.FleetOptions{DepartureGrace: grace}})
	require.NoError(t, err)
	mgr, err := mcmanager.New(fleet.Hub.Config, provider, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	require.NoError(t, errors.Join(provider.SetupWithManager(mgr), h.SetupWithManager(mgr)))
	fgtesting.Start(t, mgr.Start)

	require.NoError(t, hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}))
	kubeconfig := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: secret.DefaultNamespace, Name: s1.Name,
			Labels: map[string]string{secret.DefaultSecretLabel: "true"}},
		Data: map[string][]byte{secret.DefaultDataKey: s1.Kubeconfig},
	}
	require.NoError(t, hubClient.Create(ctx, kubeconfig))
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "testdata/webapp-rgd.yaml")))
	createWhenServed(t, c, instance(gvk, "app", map[string]any{"name": "app"}))
	requireState(t, c, gvk, "app", "ACTIVE")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NotEmpty(ct, policies(ct, c, "webapp"))
	}, wait, tick)

	// First a kubeconfig whose server cannot be reached: the cluster is
	// disengaged and retried, but its Secret still registers it.
	kubeconfig.Data[secret.DefaultDataKey] = withServer(t, s1.Kubeconfig, "https://127.0.0.1:1")
	require.NoError(t, hubClient.Update(ctx, kubeconfig))
	require.Eventually(t, func() bool { return !slices.Contains(h.Clusters(), "spoke-1") }, wait, tick)
	require.Never(t, func() bool {
		return !holdsFinalizer(t, c, gvk, "app") || len(policies(t, c, "webapp")) == 0
	}, grace+3*time.Second, tick, "a registered cluster that cannot be reached for now has not left")

	_, rotated, err := s1.AddUser("rotated", "system:masters")
	require.NoError(t, err)
	require.NoError(t, hubClient.Get(ctx, client.ObjectKeyFromObject(kubeconfig), kubeconfig))
	kubeconfig.Data[secret.DefaultDataKey] = rotated
	require.NoError(t, hubClient.Update(ctx, kubeconfig))
	require.Never(t, func() bool {
		return !holdsFinalizer(t, c, gvk, "app") || len(policies(t, c, "webapp")) == 0
	}, grace+5*time.Second, tick, "a rotation is not a departure")
	createWhenServed(t, c, instance(gvk, "after", map[string]any{"name": "after"}))
	requireState(t, c, gvk, "after", "ACTIVE")
}

func holdsFinalizer(t require.TestingT, c client.Client, gvk schema.GroupVersionKind, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u))
	return slices.Contains(u.GetFinalizers(), contract.Finalizer)
}

// withServer returns kubeconfig with every cluster's server set to server.
func withServer(t *testing.T, kubeconfig []byte, server string) []byte {
	cfg, err := clientcmd.Load(kubeconfig)
	require.NoError(t, err)
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	out, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return out
}
