package hub

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The documented metrics follow the fleet status: one state per graph and
// cluster, reachability per cluster, and engagement failures by reason;
// and they are dropped with the cluster or graph they describe.
func TestMetricsFollowTheFleetStatus(t *testing.T) {
	ctx := context.Background()
	tr := &tracker{failures: func() map[string]string {
		return map[string]string{"x": "UnsafeKubeconfig: uses an exec plugin", "y": "UnsafeKubeconfig: reads a file", "z": "DuplicateServer: same as a"}
	}}
	stop := reportEngagementFailures(tr)
	defer stop()

	tr.record(ctx, "metrics-g", "metrics-a", 1, CRDApplied, "")
	tr.record(ctx, "metrics-g", "metrics-a", 1, CRDEstablished, "")
	tr.setReachable(ctx, "metrics-a", errors.New("timeout"))

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

	forgetClusterSeries("metrics-a")
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
	tr := &tracker{}
	count := func() int {
		n, err := testutil.GatherAndCount(metrics.Registry, "fleetgraph_graph_cluster_state")
		require.NoError(t, err)
		return n
	}
	before := count()
	for _, s := range []CRDState{CRDPending, CRDApplied, CRDError, CRDEstablished} {
		tr.record(ctx, "series-g", "series-a", 1, s, "")
		assert.Equal(t, before+1, count(), "one series after moving to %s", s)
	}
	tr.dropCluster("series-a")
	assert.Equal(t, before, count(), "a dropped cluster leaves no series")
	tr.record(ctx, "series-g", "series-a", 1, CRDApplied, "")
	assert.Equal(t, before+1, count())
	tr.dropGraph("series-g")
	assert.Equal(t, before, count())
}
