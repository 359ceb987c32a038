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
	t.Parallel()
	fleet := sharedFleet(t)
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	rgd, gvk := renamedRGD(readRGD(t, "testdata/webapp-rgd.yaml"), "first-try-webapp", "FirstTryWebApp")

	start := time.Now()
	require.NoError(t, h.RegisterGraph(ctx, rgd))
	require.NoError(t, h.WaitServable(ctx, rgd.Name, "spoke-1"))
	t.Logf("servable %v after the graph was registered", time.Since(start))

	c, err := client.New(fleet.Spoke("spoke-1").Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, instance(gvk, "first-try", map[string]any{"name": "first-try"})))
	requireState(t, c, gvk, "first-try", "ACTIVE")
}
