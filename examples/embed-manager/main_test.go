//go:build integration

package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The example runs against a real hub and spoke: the platform's own
// controller keeps working, and the embedded hub serves an RGD on a spoke
// registered as a kubeconfig Secret.
func TestEmbeddedHubServesBesideThePlatformsController(t *testing.T) {
	fgtesting.SetupLogs()
	fleet := fgtesting.StartFleet(t, 1)
	// The fleet listens on 127.0.0.1, which the provider refuses by default.
	loopback := secret.Safety{AllowLoopback: true}
	fgtesting.Start(t, func(ctx context.Context) error { return run(ctx, fleet.Hub.Config, "0", loopback) })
	ctx := context.Background()

	hub, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)

	t.Run("the platform's controller still runs", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{TeamLabel: "a"}}}
		require.NoError(t, hub.Create(ctx, ns))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			cm := &corev1.ConfigMap{}
			require.NoError(ct, hub.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "team-defaults"}, cm))
			assert.Equal(ct, "a", cm.Data["team"])
		}, time.Minute, 100*time.Millisecond)
	})

	t.Run("the hub serves an RGD on a spoke from a kubeconfig Secret", func(t *testing.T) {
		spoke := fleet.Spokes()[0]
		require.NoError(t, hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}))
		require.NoError(t, hub.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: secret.DefaultNamespace, Name: spoke.Name,
				Labels: map[string]string{secret.DefaultSecretLabel: "true"}},
			Data: map[string][]byte{secret.DefaultDataKey: spoke.Kubeconfig},
		}))
		rgds, err := v1alpha1.LoadFile("../quickstart/webapp.yaml")
		require.NoError(t, err)
		rgd := rgds[0]
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NoError(ct, client.IgnoreAlreadyExists(hub.Create(ctx, rgd.DeepCopy())))
		}, time.Minute, 100*time.Millisecond, "the hub installs the RGD CRD as it starts")

		sc, err := client.New(spoke.Config, client.Options{})
		require.NoError(t, err)
		app := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": "embedded"}}}
		app.SetAPIVersion("kro.run/v1alpha1")
		app.SetKind("WebApp")
		app.SetNamespace("default")
		app.SetName("embedded")
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NoError(ct, client.IgnoreAlreadyExists(sc.Create(ctx, app.DeepCopy())))
		}, time.Minute, 100*time.Millisecond, "the spoke serves WebApp once the hub fanned its CRD out")
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			got := app.DeepCopy()
			require.NoError(ct, sc.Get(ctx, client.ObjectKeyFromObject(app), got))
			state, _, _ := unstructured.NestedString(got.Object, "status", "state")
			assert.Equal(ct, "ACTIVE", state)
		}, time.Minute, 100*time.Millisecond)
	})
}
