package hub_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/internal/hub"
)

// A cluster still served by an older version than the latest is unhealthy,
// and the summary names both generations.
func TestSummaryNamesTheServedAndTheLatestGeneration(t *testing.T) {
	tr := &hub.Tracker{}
	ctx := context.Background()
	tr.Record(ctx, "g", "a", 3, hub.CRDEstablished, "")
	tr.Record(ctx, "g", "b", 3, hub.CRDIncompatible, "kinds not served: Widget")
	s := tr.Snapshot("g", map[string]hub.InstanceCount{
		"a": {Serving: true, Generation: 3},
		"b": {Serving: true, Generation: 1, Total: 2, Ready: 2},
	}).Summary()
	assert.EqualValues(t, 1, s.Established)
	assert.EqualValues(t, 1, s.Unhealthy)
	require.Len(t, s.UnhealthyClusters, 1)
	assert.Equal(t, "Incompatible", s.UnhealthyClusters[0].State)
	assert.Equal(t, "serving generation 1; generation 3 not served yet: kinds not served: Widget", s.UnhealthyClusters[0].Message)
}

// Unreachability overrides the state shown, is undone when the cluster
// answers again, and both changes notify the graphs on that cluster.
func TestUnreachableClustersAreShownUntilTheyAnswer(t *testing.T) {
	var notified []string
	tr := &hub.Tracker{OnChange: func(g string) { notified = append(notified, g) }}
	ctx := context.Background()
	tr.Set("g", "a", hub.CRDEstablished, "")
	notified = nil

	assert.True(t, tr.SetReachable(ctx, "a", errors.New("no answer to /readyz within 1s")))
	assert.False(t, tr.SetReachable(ctx, "a", errors.New("no answer to /readyz within 1s")), "no change")
	st := tr.Snapshot("g", nil).Clusters[0]
	assert.Equal(t, hub.CRDUnreachable, st.CRD)
	assert.Equal(t, "no answer to /readyz within 1s", st.Message)

	assert.True(t, tr.SetReachable(ctx, "a", nil))
	assert.Equal(t, hub.CRDEstablished, tr.Snapshot("g", nil).Clusters[0].CRD)
	assert.Equal(t, []string{"g", "g"}, notified)
}

// A report that arrives after its graph or cluster is gone brings no ghost
// back.
func TestRecordsAfterTheEndAreDropped(t *testing.T) {
	tr := &hub.Tracker{}
	ctx, cancel := context.WithCancel(context.Background())
	tr.Record(ctx, "g", "a", 1, hub.CRDApplied, "")
	cancel()
	tr.DropGraph("g")
	assert.False(t, tr.Record(ctx, "g", "a", 1, hub.CRDEstablished, ""))
	assert.False(t, tr.SetReachable(ctx, "a", errors.New("late")))
	assert.Empty(t, tr.Snapshot("g", nil).Clusters)
}

// Clusters the provider could not engage are listed with their reason for
// every tracked graph, and not once they are engaged.
func TestClustersNotEngagedAreListed(t *testing.T) {
	failed := map[string]string{"bad": "UnsafeKubeconfig: exec plugin", "a": "stale"}
	tr := &hub.Tracker{Failures: func() map[string]string { return failed }}
	tr.Set("g", "a", hub.CRDEstablished, "")
	st := tr.Snapshot("g", nil).Clusters
	require.Len(t, st, 2)
	assert.Equal(t, hub.ClusterStatus{Cluster: "bad", CRD: hub.CRDNotEngaged, Message: "UnsafeKubeconfig: exec plugin"}, st[1])
	assert.Equal(t, hub.CRDEstablished, st[0].CRD)
	assert.Empty(t, tr.Snapshot("unknown", nil).Clusters, "a graph not tracked shows nothing")
}
