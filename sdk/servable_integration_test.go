//go:build integration

package sdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// Once WaitServable returns, a client that maps kinds through discovery,
// as kubectl and every controller-runtime client do, creates an instance
// on the first try, and the instance becomes ACTIVE. FleetStatus saying
// Established is not enough for that: discovery lags it.
func TestAnInstanceCreatedRightAfterWaitServableSucceedsFirstTry(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 1)
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{DisableRGDController: true})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	start := time.Now()
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "testdata/webapp-rgd.yaml")))
	require.NoError(t, h.WaitServable(ctx, "webapp", "spoke-1"))
	t.Logf("servable %v after the graph was registered", time.Since(start))

	c, err := client.New(fleet.Spoke("spoke-1").Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, instance(webAppGVK, "first-try", map[string]any{"name": "first-try"})))
	requireState(t, c, webAppGVK, "first-try", "ACTIVE")
}
