//go:build integration

package agent_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph-agent/internal/agent"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// loadWindow is how long each phase of BenchmarkAgentHubLoad is counted
// (PULL_LOAD_WINDOW overrides, in seconds).
func loadWindow(b *testing.B) time.Duration {
	if s := os.Getenv("PULL_LOAD_WINDOW"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(b, err)
		return time.Duration(n) * time.Second
	}
	return time.Minute
}

// BenchmarkAgentHubLoad counts the requests one agent, with its default
// intervals, sends the hub: at rest (one graph served, one instance, no
// change) and in the minute a new revision reaches it. Run it with
// `go test -tags integration -run '^$' -bench AgentHubLoad -benchtime 1x`.
func BenchmarkAgentHubLoad(b *testing.B) {
	for range b.N {
		ctx := context.Background()
		window := loadWindow(b)
		fleet := fgtesting.StartFleet(b, 1)
		pulled := fleet.Spokes()[0]
		h, _ := startHub(b, fleet.Hub.Config, fgtesting.NewProvider(), sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
		counter := &requestCounter{}
		hubCfg := join(b, fleet.Hub, "edge-1", nil)
		hubCfg.Wrap(counter.wrap)
		startAgent(b, "edge-1", hubCfg, pulled, func(o *agent.Options) {
			o.RenewInterval, o.ReportInterval, o.SyncInterval = 0, 0, 0 // the defaults
		})
		require.NoError(b, h.RegisterGraph(ctx, beaconRGD(b, "glow", "Glow", "1")))
		gvk := gvkOf("Glow")
		createWhenServed(b, pulled.Config, instance(gvk, "dot", "green"))
		requireState(b, pulled.Config, gvk, "dot", "ACTIVE")
		requireServed(b, fleet.Hub, "edge-1", "glow", 1)

		counter.take()
		time.Sleep(window) // the window is what is measured
		rest, restTotal := counter.take()

		start := time.Now()
		require.NoError(b, h.RegisterGraph(ctx, beaconRGD(b, "glow", "Glow", "2")))
		requireServed(b, fleet.Hub, "edge-1", "glow", 2)
		reached := time.Since(start)
		time.Sleep(time.Until(start.Add(window)))
		rollout, rolloutTotal := counter.take()

		perMinute := func(n int) float64 { return float64(n) / window.Minutes() }
		b.ReportMetric(perMinute(restTotal), "req/min-rest")
		b.ReportMetric(perMinute(rolloutTotal), "req/min-rollout")
		b.ReportMetric(reached.Seconds(), "s-to-serve-rev2")
		b.Logf("at rest, %s: %s", window, describeCounts(rest))
		b.Logf("a new revision, first %s (served after %s): %s", window, reached.Round(10*time.Millisecond), describeCounts(rollout))
	}
}

// requireServed waits until the cluster's agent reports the graph served
// at revision rev.
func requireServed(b testing.TB, hubCluster *fgtesting.Cluster, cluster, graphName string, rev int64) {
	b.Helper()
	hub := newClient(b, hubCluster.Config)
	require.EventuallyWithT(b, func(ct *assert.CollectT) {
		rep := &fgv1alpha1.GraphReport{}
		require.NoError(ct, hub.Get(context.Background(), client.ObjectKey{Namespace: fgv1alpha1.PullNamespace(cluster), Name: graphName}, rep))
		require.NotNil(ct, rep.Status.Served)
		assert.Equal(ct, rev, rep.Status.Served.Revision)
		assert.Equal(ct, int32(1), rep.Status.Instances.Ready)
	}, wait, tick, "%s reports %s served at revision %d", cluster, graphName, rev)
}
