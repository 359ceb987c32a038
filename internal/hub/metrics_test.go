package hub_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fleetgraph/fleetgraph/internal/hub"
)

// The documented metrics follow the fleet status: one state per graph and
// cluster, reachability per cluster, and engagement failures by reason;
// and they are dropped with the cluster or graph they describe.
func TestMetricsFollowTheFleetStatus(t *testing.T) {
	ctx := context.Background()
	tr := &hub.Tracker{Failures: func() map[string]string {
		return map[string]string{"x": "UnsafeKubeconfig: uses an exec plugin", "y": "UnsafeKubeconfig: reads a file", "z": "DuplicateServer: same as a"}
	}}
	stop := hub.ReportEngagementFailures(tr)
	defer stop()

	tr.Record(ctx, "metrics-g", "metrics-a", 1, hub.CRDApplied, "")
	tr.Record(ctx, "metrics-g", "metrics-a", 1, hub.CRDEstablished, "")
	tr.SetReachable(ctx, "metrics-a", errors.New("timeout"))

	expect := `
# HELP fleetgraph_graph_cluster_state 1 for the state (Pending, Applied, Established, Conflict, Incompatible, Error, Unreachable) a graph has on a cluster.
# TYPE fleetgraph_graph_cluster_state gauge
fleetgraph_graph_cluster_state{cluster="metrics-a",graph="metrics-g",state="Established"} 1
# HELP fleetgraph_cluster_reachable 1 while the cluster's API server answers the hub's probe, 0 while it is Unreachable.
# TYPE fleetgraph_cluster_reachable gauge
fleetgraph_cluster_reachable{cluster="metrics-a"} 0
# HELP fleetgraph_clusters_not_engaged Clusters a provider offered but could not engage (unsafe or malformed kubeconfig, unreachable, duplicate server), by reason.
# TYPE fleetgraph_clusters_not_engaged gauge
fleetgraph_clusters_not_engaged{reason="DuplicateServer"} 1
fleetgraph_clusters_not_engaged{reason="UnsafeKubeconfig"} 2
`
	require.NoError(t, testutil.GatherAndCompare(metrics.Registry, strings.NewReader(expect),
		"fleetgraph_graph_cluster_state", "fleetgraph_cluster_reachable", "fleetgraph_clusters_not_engaged"))

	hub.ForgetCluster("metrics-a")
	stop()
	n, err := testutil.GatherAndCount(metrics.Registry, "fleetgraph_graph_cluster_state", "fleetgraph_cluster_reachable", "fleetgraph_clusters_not_engaged")
	require.NoError(t, err)
	assert.Zero(t, n, "a cluster that left, and a hub that stopped, leave no series")
}

// A cluster's state series moves with each transition, goes with the
// cluster when the tracker drops it, and a new engagement starts one
// series afresh: never two states at once for a graph and cluster.
func TestStateSeriesMovesWithTransitions(t *testing.T) {
	ctx := context.Background()
	tr := &hub.Tracker{}
	count := func() int {
		n, err := testutil.GatherAndCount(metrics.Registry, "fleetgraph_graph_cluster_state")
		require.NoError(t, err)
		return n
	}
	before := count()
	for _, s := range []hub.CRDState{hub.CRDPending, hub.CRDApplied, hub.CRDError, hub.CRDEstablished} {
		tr.Record(ctx, "series-g", "series-a", 1, s, "")
		assert.Equal(t, before+1, count(), "one series after moving to %s", s)
	}
	tr.DropCluster("series-a")
	assert.Equal(t, before, count(), "a dropped cluster leaves no series")
	tr.Record(ctx, "series-g", "series-a", 1, hub.CRDApplied, "")
	assert.Equal(t, before+1, count())
	tr.DropGraph("series-g")
	assert.Equal(t, before, count())
}
