package hub_test

import (
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
