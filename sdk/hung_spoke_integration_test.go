//go:build integration

package sdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A spoke whose API server hangs (it accepts connections and never
// answers, seen through a proxy that hangs) before a graph is registered
// delays only itself on the hub side too: the fan-out serves the graph on
// the other spoke, FleetStatus answers at once, the prober reports the hung
// spoke Unreachable, and once it answers again it is served like the other.
func TestAHungSpokeDelaysOnlyItselfOnTheHub(t *testing.T) {
	t.Parallel()
	fleet := sharedFleet(t) // spoke-2 hangs behind a proxy of this test's own
	ctx := context.Background()
	healthy, hung := fleet.Spoke("spoke-1"), fleet.Spoke("spoke-2")
	proxy, viaProxy := fgtesting.StartProxy(t, hung.Config)
	provider := fgtesting.NewProvider()
	require.NoError(t, provider.AddConfig(ctx, healthy.Name, healthy.Config))
	require.NoError(t, provider.AddConfig(ctx, hung.Name, viaProxy))
	probe := sdk.ProberOptions{Interval: time.Second, Timeout: time.Second}
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Fleet: sdk.FleetOptions{Probe: probe}})
	t.Cleanup(proxy.Resume) // before the hub stops: cleanups run last first
	require.Eventually(t, func() bool { return len(provider.ClusterNames()) == 2 }, wait, tick, "both spokes engaged")

	proxy.Hang()
	paint, gvk := renamedRGD(rgdFromString(t, paintRGD), "hung-paint", "HungPaint")
	require.NoError(t, h.RegisterGraph(ctx, paint))
	c1 := newClient(t, healthy.Config)
	createWhenServed(t, c1, instance(gvk, "beside-a-hung-one", map[string]any{"color": "blue"}))
	requireState(t, c1, gvk, "beside-a-hung-one", "ACTIVE")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		start := time.Now()
		st := served(h, paint.Name)
		assert.Less(ct, time.Since(start), time.Second, "FleetStatus must not wait for a hung spoke")
		assert.Equal(ct, sdk.CRDEstablished, st["spoke-1"].CRD)
		assert.Equal(ct, 1, st["spoke-1"].ReadyInstances)
		assert.Equal(ct, sdk.CRDUnreachable, st["spoke-2"].CRD)
	}, wait, tick)

	proxy.Resume()
	c2 := newClient(t, hung.Config)
	createWhenServed(t, c2, instance(gvk, "hung-back", map[string]any{"color": "blue"}))
	requireState(t, c2, gvk, "hung-back", "ACTIVE")
}
