package hub

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Unreachability overrides the state shown, is undone when the cluster
// answers again, and both changes notify the graphs on that cluster.
func TestUnreachableClustersAreShownUntilTheyAnswer(t *testing.T) {
	var notified []string
	tr := &tracker{onChange: func(g string) { notified = append(notified, g) }}
	ctx := context.Background()
	tr.set("g", "a", CRDEstablished, "")
	notified = nil

	assert.True(t, tr.setReachable(ctx, "a", errors.New("no answer to /readyz within 1s")))
	assert.False(t, tr.setReachable(ctx, "a", errors.New("no answer to /readyz within 1s")), "no change")
	st := tr.snapshot("g").Clusters[0]
	assert.Equal(t, CRDUnreachable, st.CRD)
	assert.Equal(t, "no answer to /readyz within 1s", st.Message)

	assert.True(t, tr.setReachable(ctx, "a", nil))
	assert.Equal(t, CRDEstablished, tr.snapshot("g").Clusters[0].CRD)
	assert.Equal(t, []string{"g", "g"}, notified)
}

// A report that arrives after its graph or cluster is gone brings no ghost
// back.
func TestRecordsAfterTheEndAreDropped(t *testing.T) {
	tr := &tracker{}
	ctx, cancel := context.WithCancel(context.Background())
	tr.record(ctx, "g", "a", 1, CRDApplied, "")
	cancel()
	tr.dropGraph("g")
	assert.False(t, tr.record(ctx, "g", "a", 1, CRDEstablished, ""))
	assert.False(t, tr.setReachable(ctx, "a", errors.New("late")))
	assert.Empty(t, tr.snapshot("g").Clusters)
}

// Clusters the provider could not engage are listed with their reason for
// every tracked graph, and not once they are engaged.
func TestClustersNotEngagedAreListed(t *testing.T) {
	failed := map[string]string{"bad": "UnsafeKubeconfig: exec plugin", "a": "stale"}
	tr := &tracker{failures: func() map[string]string { return failed }}
	tr.set("g", "a", CRDEstablished, "")
	st := tr.snapshot("g").Clusters
	require.Len(t, st, 2)
	assert.Equal(t, ClusterStatus{Cluster: "bad", CRD: CRDNotEngaged, Message: "UnsafeKubeconfig: exec plugin"}, st[1])
	assert.Equal(t, CRDEstablished, st[0].CRD)
	assert.Empty(t, tr.snapshot("unknown").Clusters, "a graph not tracked shows nothing")
}
