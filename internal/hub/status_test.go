package hub_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/internal/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// The summary written on an RGD stays small however large the fleet: counts
// for all clusters, names only for the first unhealthy ones.
func TestSummaryIsBoundedOnALargeFleet(t *testing.T) {
	tr := &hub.Tracker{}
	counts := map[string]hub.InstanceCount{}
	for i := range 1000 {
		name := fmt.Sprintf("c%04d", i)
		state := hub.CRDEstablished
		if i%10 == 0 {
			state = hub.CRDConflict
		}
		tr.Set("g", name, state, "msg "+name)
		counts[name] = hub.InstanceCount{Total: 2, Ready: 1}
	}
	s := tr.Snapshot("g", counts).Summary()

	assert.EqualValues(t, 1000, s.Clusters)
	assert.EqualValues(t, 900, s.Established)
	assert.EqualValues(t, 100, s.Unhealthy)
	assert.EqualValues(t, 2000, s.Instances)
	assert.EqualValues(t, 1000, s.ReadyInstances)
	require.Len(t, s.UnhealthyClusters, v1alpha1.MaxUnhealthyClusters)
	assert.Equal(t, v1alpha1.ClusterHealth{Name: "c0000", State: "Conflict", Message: "msg c0000"}, s.UnhealthyClusters[0])
	assert.Equal(t, "c0010", s.UnhealthyClusters[1].Name, "sorted by cluster name")
}

func TestSetReportsTransitionsAndNotifiesChanges(t *testing.T) {
	var notified []string
	tr := &hub.Tracker{OnChange: func(g string) { notified = append(notified, g) }}

	assert.True(t, tr.Set("g", "a", hub.CRDApplied, ""), "first state is a transition")
	assert.True(t, tr.Set("g", "a", hub.CRDEstablished, ""))
	assert.False(t, tr.Set("g", "a", hub.CRDEstablished, ""), "same state: no transition")
	assert.False(t, tr.Set("g", "a", hub.CRDEstablished, "note"), "a new message alone is no transition")
	assert.Equal(t, []string{"g", "g", "g"}, notified, "every change but the no-op notifies")
}

func TestDroppedClustersAndGraphsLeaveTheSnapshot(t *testing.T) {
	tr := &hub.Tracker{}
	tr.Set("g1", "a", hub.CRDEstablished, "")
	tr.Set("g1", "b", hub.CRDError, "boom")
	tr.Set("g2", "a", hub.CRDEstablished, "")

	tr.DropCluster("a")
	st := tr.Snapshot("g1", nil)
	require.Len(t, st.Clusters, 1)
	assert.Equal(t, "b", st.Clusters[0].Cluster)
	assert.Empty(t, tr.Snapshot("g2", nil).Clusters)

	tr.DropGraph("g1")
	assert.Empty(t, tr.Snapshot("g1", nil).Clusters)
}

// Every cluster that should serve a graph is in its status from the
// start: Pending until a fan-out reports, Unreachable when the prober says
// so, with the reason it waits; a cluster nobody expects is not listed.
func TestExpectedClustersArePendingUntilTheirFirstFanOut(t *testing.T) {
	tr := &hub.Tracker{Expected: func(g string) hub.Expectation {
		if g != "g" {
			return hub.Expectation{}
		}
		return hub.Expectation{Generation: 3, Clusters: map[string]string{"a": "", "b": "", "c": "revision 2 waits: wave 2"}}
	}}
	tr.SetReachable(context.Background(), "b", errors.New("no answer to /readyz within 1s"))

	st := tr.Snapshot("g", nil)
	require.Len(t, st.Clusters, 3)
	assert.Equal(t, hub.CRDPending, st.Clusters[0].CRD)
	assert.EqualValues(t, 3, st.Clusters[0].Generation)
	assert.NotEmpty(t, st.Clusters[0].Message)
	assert.Equal(t, hub.CRDUnreachable, st.Clusters[1].CRD)
	assert.Equal(t, "no answer to /readyz within 1s", st.Clusters[1].Message)
	assert.Equal(t, "revision 2 waits: wave 2", st.Clusters[2].Message)
	s := st.Summary()
	assert.EqualValues(t, 3, s.Unhealthy, "a cluster that has not served the graph is not healthy")
	assert.Zero(t, s.Established)
	assert.Empty(t, tr.Snapshot("other", nil).Clusters)

	tr.Record(context.Background(), "g", "a", 3, hub.CRDEstablished, "")
	st = tr.Snapshot("g", nil)
	assert.Equal(t, hub.CRDEstablished, st.Clusters[0].CRD, "a fan-out's report replaces Pending")
	assert.EqualValues(t, 2, st.Summary().Unhealthy)
}

// A cluster that joins, leaves or changes reachability reaches every
// graph's status, also a graph that lists it only as expected.
func TestClusterChangesNotifyEveryGraph(t *testing.T) {
	var notified []string
	tr := &hub.Tracker{
		OnChange: func(g string) { notified = append(notified, g) },
		Expected: func(string) hub.Expectation { return hub.Expectation{Clusters: map[string]string{"a": ""}} },
	}
	tr.Snapshot("new", nil) // listed, with no fan-out report yet

	tr.Engaged("b")
	tr.SetReachable(context.Background(), "a", errors.New("down"))
	tr.DropCluster("a")

	assert.Equal(t, []string{"new", "new", "new"}, notified)
}
