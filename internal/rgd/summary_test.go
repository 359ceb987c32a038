package rgd

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// A cluster still served by an older version than the latest is unhealthy,
// and the summary names both generations.
func TestSummaryNamesTheServedAndTheLatestGeneration(t *testing.T) {
	s := Summary(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{
		{Cluster: "a", CRD: hub.CRDEstablished, Generation: 3, Serving: true, ServedGeneration: 3},
		{Cluster: "b", CRD: hub.CRDIncompatible, Message: "kinds not served: Widget", Generation: 3,
			Serving: true, ServedGeneration: 1, Instances: 2, ReadyInstances: 2},
	}})
	assert.EqualValues(t, 1, s.Established)
	assert.EqualValues(t, 1, s.Unhealthy)
	require.Len(t, s.UnhealthyClusters, 1)
	assert.Equal(t, "Incompatible", s.UnhealthyClusters[0].State)
	assert.Equal(t, "serving generation 1; generation 3 not served yet: kinds not served: Widget", s.UnhealthyClusters[0].Message)
}

// The summary written on an RGD stays small however large the fleet: counts
// for all clusters, names only for the first unhealthy ones.
func TestSummaryIsBoundedOnALargeFleet(t *testing.T) {
	st := hub.GraphStatus{Graph: "g"}
	for i := range 1000 {
		name := fmt.Sprintf("c%04d", i)
		state := hub.CRDEstablished
		if i%10 == 0 {
			state = hub.CRDConflict
		}
		st.Clusters = append(st.Clusters, hub.ClusterStatus{Cluster: name, CRD: state, Message: "msg " + name, Instances: 2, ReadyInstances: 1})
	}
	s := Summary(st)

	assert.EqualValues(t, 1000, s.Clusters)
	assert.EqualValues(t, 900, s.Established)
	assert.EqualValues(t, 100, s.Unhealthy)
	assert.EqualValues(t, 2000, s.Instances)
	assert.EqualValues(t, 1000, s.ReadyInstances)
	require.Len(t, s.UnhealthyClusters, v1alpha1.MaxUnhealthyClusters)
	assert.Equal(t, v1alpha1.ClusterHealth{Name: "c0000", State: "Conflict", Message: "msg c0000"}, s.UnhealthyClusters[0])
	assert.Equal(t, "c0010", s.UnhealthyClusters[1].Name, "sorted by cluster name")
}

// A cluster that has not served the graph yet (Pending) is not healthy.
func TestSummaryCountsPendingClustersUnhealthy(t *testing.T) {
	s := Summary(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{
		{Cluster: "a", CRD: hub.CRDPending, Message: "waiting"},
		{Cluster: "b", CRD: hub.CRDEstablished},
	}})
	assert.EqualValues(t, 1, s.Unhealthy)
	assert.EqualValues(t, 1, s.Established)
}
