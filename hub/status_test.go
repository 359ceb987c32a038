package hub

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSetReportsTransitionsAndNotifiesChanges(t *testing.T) {
	var notified []string
	tr := &tracker{onChange: func(g string) { notified = append(notified, g) }}

	assert.True(t, tr.set("g", "a", CRDApplied, ""), "first state is a transition")
	assert.True(t, tr.set("g", "a", CRDEstablished, ""))
	assert.False(t, tr.set("g", "a", CRDEstablished, ""), "same state: no transition")
	assert.False(t, tr.set("g", "a", CRDEstablished, "note"), "a new message alone is no transition")
	assert.Equal(t, []string{"g", "g", "g"}, notified, "every change but the no-op notifies")
}

func TestDroppedClustersAndGraphsLeaveTheSnapshot(t *testing.T) {
	tr := &tracker{}
	tr.set("g1", "a", CRDEstablished, "")
	tr.set("g1", "b", CRDError, "boom")
	tr.set("g2", "a", CRDEstablished, "")

	tr.dropCluster("a")
	st := tr.snapshot("g1")
	require.Len(t, st.Clusters, 1)
	assert.Equal(t, "b", st.Clusters[0].Cluster)
	assert.Empty(t, tr.snapshot("g2").Clusters)

	tr.dropGraph("g1")
	assert.Empty(t, tr.snapshot("g1").Clusters)
}

// Every cluster that should serve a graph is in its status from the
// start: Pending until a fan-out reports, Unreachable when the prober says
// so, with the reason it waits; a cluster nobody expects is not listed.
func TestExpectedClustersArePendingUntilTheirFirstFanOut(t *testing.T) {
	tr := &tracker{expected: func(g string) (int64, map[string]string) {
		if g != "g" {
			return 0, nil
		}
		return 3, map[string]string{"a": "", "b": "", "c": "revision 2 waits: wave 2"}
	}}
	tr.setReachable(context.Background(), "b", errors.New("no answer to /readyz within 1s"))

	st := tr.snapshot("g")
	require.Len(t, st.Clusters, 3)
	assert.Equal(t, CRDPending, st.Clusters[0].CRD)
	assert.EqualValues(t, 3, st.Clusters[0].Generation)
	assert.NotEmpty(t, st.Clusters[0].Message)
	assert.Equal(t, CRDUnreachable, st.Clusters[1].CRD)
	assert.Equal(t, "no answer to /readyz within 1s", st.Clusters[1].Message)
	assert.Equal(t, "revision 2 waits: wave 2", st.Clusters[2].Message)
	for _, c := range st.Clusters {
		assert.False(t, c.Healthy(), "a cluster that has not served the graph is not healthy")
	}
	assert.Empty(t, tr.snapshot("other").Clusters)

	tr.record(context.Background(), "g", "a", 3, CRDEstablished, "")
	st = tr.snapshot("g")
	assert.Equal(t, CRDEstablished, st.Clusters[0].CRD, "a fan-out's report replaces Pending")
	assert.True(t, st.Clusters[0].Healthy())
}

// A cluster that joins, leaves or changes reachability reaches every
// graph's status, also a graph that lists it only as expected.
func TestClusterChangesNotifyEveryGraph(t *testing.T) {
	var notified []string
	tr := &tracker{
		onChange: func(g string) { notified = append(notified, g) },
		expected: func(string) (int64, map[string]string) { return 0, map[string]string{"a": ""} },
	}
	tr.snapshot("new") // listed, with no fan-out report yet

	tr.engaged("b")
	tr.setReachable(context.Background(), "a", errors.New("down"))
	tr.dropCluster("a")

	assert.Equal(t, []string{"new", "new", "new"}, notified)
}
