package replicas

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fleetgraph/fleetgraph/hub"
)

func clusterNames(s hub.GraphStatus) map[string]bool {
	out := map[string]bool{}
	for _, c := range s.Clusters {
		out[c.Cluster] = c.HandingOver
	}
	return out
}

// TestAClusterLetGoStaysListedUntilItsNewOwnerReportsIt: between a
// replica letting a cluster go and its new owner reporting it, the union
// still lists the cluster (marked HandingOver, with its last state); once
// another replica's record serves it, the new owner's entry is the one
// listed and the old owner stops publishing it.
func TestAClusterLetGoStaysListedUntilItsNewOwnerReportsIt(t *testing.T) {
	now := time.Now()
	r := &Status{Replica: "a", TTL: time.Minute}
	r.withHandovers(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1"}, {Cluster: "c2", Instances: 7}}}, now)

	own := r.withHandovers(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1"}}}, now.Add(time.Second))
	assert.Equal(t, map[string]bool{"c1": false, "c2": true}, clusterNames(own), "c2 is published as being handed over")
	got := r.merge(own, nil, now.Add(time.Second))
	assert.Equal(t, map[string]bool{"c1": false, "c2": true}, clusterNames(got), "no one serves c2 yet: it stays listed")
	assert.Equal(t, 7, got.Clusters[1].Instances, "with its last state")

	records := []corev1.ConfigMap{replicaRecord(t, "b", now.Add(2*time.Second), hub.ClusterStatus{Cluster: "c2", Instances: 8})}
	r.takenOver("g", records, now.Add(2*time.Second))
	got = r.merge(own, records, now.Add(2*time.Second))
	assert.Equal(t, map[string]bool{"c1": false, "c2": false}, clusterNames(got), "the new owner's entry wins")
	assert.Equal(t, 8, got.Clusters[1].Instances)
	own = r.withHandovers(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1"}}}, now.Add(3*time.Second))
	assert.Equal(t, map[string]bool{"c1": false}, clusterNames(own), "taken over: no longer published")
}

// TestAClusterLetGoIsListedForOneTTLAtMost: a cluster that left the fleet
// (no one takes it over) goes from the published view after one TTL; a
// hand-over in another replica's record never hides a served entry.
func TestAClusterLetGoIsListedForOneTTLAtMost(t *testing.T) {
	now := time.Now()
	r := &Status{Replica: "a", TTL: time.Minute}
	r.withHandovers(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1"}, {Cluster: "gone"}}}, now)
	for _, at := range []time.Duration{time.Second, 60 * time.Second} { // let go at 1 s
		own := r.withHandovers(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1"}}}, now.Add(at))
		assert.Contains(t, clusterNames(own), "gone", "at %s", at)
	}
	own := r.withHandovers(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1"}}}, now.Add(61*time.Second))
	assert.Equal(t, map[string]bool{"c1": false}, clusterNames(own))

	records := []corev1.ConfigMap{replicaRecord(t, "b", now, hub.ClusterStatus{Cluster: "c1", HandingOver: true, Instances: 1})}
	got := r.merge(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1", Instances: 2}}}, records, now)
	assert.Equal(t, []hub.ClusterStatus{{Cluster: "c1", Instances: 2}}, got.Clusters)
}

// TestForgetDropsAGraphsHandOvers: removing a graph keeps nothing of it in
// memory, so graphs that come and go (a tenant's RGDs) cost nothing after.
func TestForgetDropsAGraphsHandOvers(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	r := &Status{Client: c, Namespace: "kube-system", Replica: "a", TTL: time.Minute}
	now := time.Now()
	r.withHandovers(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1"}, {Cluster: "c2"}}}, now)
	r.withHandovers(hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1"}}}, now)
	require.NotEmpty(t, r.handing["g"])

	require.NoError(t, r.Forget(context.Background(), "g"))

	assert.NotContains(t, r.lastOwn, "g")
	assert.NotContains(t, r.handing, "g")
}
