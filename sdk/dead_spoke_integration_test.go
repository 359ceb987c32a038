//go:build integration

package sdk_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A spoke whose API server died after it was engaged delays only itself:
// the others get the CRD and serve instances, the dead one is reported with
// as Unreachable (the hub's probe) and retried, and it drops out once its
// provider removes it.
func TestADeadSpokeDelaysOnlyItself(t *testing.T) {
	t.Parallel()
	fleet, provider, h := startHubWithDeadSpoke(t)
	ctx := context.Background()
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "testdata/webapp-rgd.yaml")))

	c1 := newClient(t, fleet.Spoke("spoke-1").Config)
	createWhenServed(t, c1, instance(webAppGVK, "alive", map[string]any{"name": "alive"}))
	requireState(t, c1, webAppGVK, "alive", "ACTIVE")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := clusterStates(h, "webapp")
		assert.Equal(ct, "Established 1/1", st["spoke-1"])
		assert.Equal(ct, "Unreachable 0/0", st["spoke-2"], "the dead spoke is reported, not hidden")
	}, wait, tick)

	provider.Remove("spoke-2")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"spoke-1": "Established 1/1"}, clusterStates(h, "webapp"))
	}, wait, tick)
}

// startHubWithDeadSpoke runs a hub (RGD controller off) on a fleet of two
// spokes and stops spoke-2's API server once both are engaged, before
// anything watches it (an API server with open watches can be slow to stop
// on a loaded machine). The provider keeps spoke-2 until it is removed.
func startHubWithDeadSpoke(t *testing.T) (*fgtesting.Fleet, *fgtesting.Provider, *sdk.Hub) {
	t.Helper()
	fleet := fgtesting.StartFleet(t, 2) // its own: spoke-2 is stopped
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	require.Eventually(t, func() bool { return len(provider.ClusterNames()) == 2 }, wait, tick,
		"both spokes engaged before one dies")
	require.NoError(t, fleet.StopSpoke("spoke-2"))
	return fleet, provider, h
}
