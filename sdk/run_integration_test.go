//go:build integration

package sdk_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// Run sets up a provider that needs it: with the secret provider, a spoke
// registered as a kubeconfig Secret is served, where it used to be left
// out without a word.
func TestRunServesTheSecretProvidersSpokes(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1) // its own: the secret provider engages every kubeconfig Secret on its hub cluster
	spoke := fleet.Spokes()[0]
	// The fleet listens on 127.0.0.1, which the provider refuses by default.
	h, err := sdk.NewHub(secret.New(secret.Options{Safety: secret.Safety{AllowLoopback: true}}), sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.NoError(t, err)
	fgtesting.Start(t, func(ctx context.Context) error { return h.Run(ctx, fleet.Hub.Config) })

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	hub := newClient(t, fleet.Hub.Config)
	require.NoError(t, hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}))
	require.NoError(t, hub.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: secret.DefaultNamespace, Name: spoke.Name,
			Labels: map[string]string{secret.DefaultSecretLabel: "true"}},
		Data: map[string][]byte{secret.DefaultDataKey: spoke.Kubeconfig},
	}))
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "testdata/webapp-rgd.yaml")))
	require.NoError(t, h.WaitServable(ctx, "webapp", spoke.Name))
}
