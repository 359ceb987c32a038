package replicas

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fleetgraph/fleetgraph/hub"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

func replicaRecord(t *testing.T, replica string, renewed time.Time, clusters ...hub.ClusterStatus) corev1.ConfigMap {
	raw, err := json.Marshal(clusters)
	require.NoError(t, err)
	return corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{LabelReplica: replica},
			Annotations: map[string]string{AnnotationRenewed: renewed.Format(time.RFC3339Nano)},
		},
		Data: map[string]string{recordKey: string(raw)},
	}
}

// TestReplicaStatusMerge: the union lists every cluster once, this
// replica's view first, then the freshest live record; expired and
// unreadable records count for nothing, nor does this replica's own record.
func TestReplicaStatusMerge(t *testing.T) {
	now := time.Now()
	r := &Status{Replica: "a", TTL: time.Minute}
	own := hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1", Instances: 1}}}
	bad := replicaRecord(t, "e", now)
	bad.Data[recordKey] = "{not json"
	records := []corev1.ConfigMap{
		replicaRecord(t, "a", now, hub.ClusterStatus{Cluster: "stale-own"}),
		replicaRecord(t, "b", now.Add(-10*time.Second), hub.ClusterStatus{Cluster: "c1", Instances: 9}, hub.ClusterStatus{Cluster: "c2", Instances: 2}),
		replicaRecord(t, "c", now.Add(-2*time.Minute), hub.ClusterStatus{Cluster: "c4", Instances: 4}),
		replicaRecord(t, "d", now, hub.ClusterStatus{Cluster: "c2", Instances: 3}, hub.ClusterStatus{Cluster: "c3", Instances: 3}),
		bad,
	}

	got := r.merge(own, records, now)

	byName := map[string]int{}
	for _, c := range got.Clusters {
		byName[c.Cluster] = c.Instances
	}
	assert.Equal(t, map[string]int{"c1": 1, "c2": 3, "c3": 3}, byName)
	assert.Equal(t, "g", got.Graph)
	assert.Equal(t, []hub.ClusterStatus{{Cluster: "c1", Instances: 1}}, own.Clusters, "own view untouched")
}

// TestReplicaStatusExpired: records of ours that outlived the TTL are up
// for deletion, this replica's own included (a lone replica would keep
// its records of deleted graphs otherwise); a live record is not, nor is
// a ConfigMap someone else labelled like a record.
func TestReplicaStatusExpired(t *testing.T) {
	now := time.Now()
	meta := func(replica string, renewed time.Time, ours bool) metav1.PartialObjectMetadata {
		cm := replicaRecord(t, replica, renewed)
		if ours {
			cm.Labels[contract.LabelManagedBy] = contract.ManagedBy
		}
		cm.Name = replica
		return metav1.PartialObjectMetadata{ObjectMeta: cm.ObjectMeta}
	}
	records := []metav1.PartialObjectMetadata{
		meta("a", now.Add(-time.Hour), true),
		meta("dead", now.Add(-61*time.Second), true),
		meta("c", now.Add(-59*time.Second), true),
		meta("not-ours", now.Add(-time.Hour), false),
		meta("unstamped", time.Time{}, true),
	}
	records[4].Annotations = nil

	got := expired(records, time.Minute, now)

	var names []string
	for _, m := range got {
		names = append(names, m.Name)
	}
	assert.Equal(t, []string{"a", "dead", "unstamped"}, names)
}

// TestReplicaStatusAwaitsPeersNewToAGraph: a replica that keeps live
// records of other graphs but none of this one has not reported its
// clusters yet; one that reported, this replica and expired peers are not
// awaited.
func TestReplicaStatusAwaitsPeersNewToAGraph(t *testing.T) {
	now := time.Now()
	meta := func(replica string, renewed time.Time) metav1.PartialObjectMetadata {
		cm := replicaRecord(t, replica, renewed)
		cm.Labels[contract.LabelManagedBy] = contract.ManagedBy
		return metav1.PartialObjectMetadata{ObjectMeta: cm.ObjectMeta}
	}
	r := &Status{Replica: "a", TTL: time.Minute}
	r.setPeers(peersOf([]metav1.PartialObjectMetadata{
		meta("a", now), meta("b", now), meta("c", now), meta("gone", now.Add(-2*time.Minute)),
	}, r.TTL, now))

	assert.Equal(t, []string{"b", "c"}, r.awaiting(nil, now), "a new graph: no one else reported")
	assert.Equal(t, []string{"c"}, r.awaiting([]corev1.ConfigMap{replicaRecord(t, "b", now)}, now))
	assert.Equal(t, []string{"c"}, r.awaiting([]corev1.ConfigMap{
		replicaRecord(t, "b", now), replicaRecord(t, "c", now.Add(-2*time.Minute)),
	}, now), "an expired record is no report")
}

// A record whose replica stopped (its peer Lease expired) still counts,
// but its clusters say so; once another replica lists one, that one's
// view is taken, and until it has observed the cluster, the stopped
// replica's last word with it, so the counts do not drop.
func TestAStoppedReplicasClustersAreMarkedUntilTakenOver(t *testing.T) {
	now := time.Now()
	r := &Status{Replica: "a", TTL: time.Minute}
	dead := replicaRecord(t, "b", now.Add(-5*time.Second),
		hub.ClusterStatus{Cluster: "c2", CRD: hub.CRDEstablished, Serving: true, ServedRevision: 1, DesiredRevision: 1, Instances: 3, ReadyInstances: 3},
		hub.ClusterStatus{Cluster: "c3", CRD: hub.CRDEstablished, Serving: true, ServedRevision: 1, DesiredRevision: 1, Instances: 4, ReadyInstances: 4})
	dead.Annotations[AnnotationPeer] = "b"
	alive := liveness{known: true, live: map[string]bool{"a": true}}
	own := hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{
		{Cluster: "c1", CRD: hub.CRDEstablished, Serving: true, ServedRevision: 1, Instances: 1},
		{Cluster: "c3", CRD: hub.CRDPending, Message: "waiting for the first fan-out to this cluster to finish"},
	}}

	got, from := r.mergeWith(own, []corev1.ConfigMap{dead}, now, alive)

	require.Len(t, got.Clusters, 3, "each cluster once")
	byName := map[string]hub.ClusterStatus{}
	total := 0
	for _, c := range got.Clusters {
		byName[c.Cluster] = c
		total += c.Instances
	}
	assert.Equal(t, 8, total, "counts summed: the stopped replica's last counts stand")
	assert.Equal(t, hub.ReasonReplicaGone, byName["c2"].Reason)
	assert.Contains(t, byName["c2"].Why, "hub replica b, which served the cluster, stopped")
	assert.False(t, byName["c2"].Healthy())
	assert.True(t, byName["c3"].HandingOver, "taken over, not observed yet")
	assert.Contains(t, byName["c3"].Why, "hub replica a is taking the cluster over")
	assert.Equal(t, "b", from["c2"])

	got, _ = r.mergeWith(own, []corev1.ConfigMap{dead}, now, liveness{known: true, live: map[string]bool{"a": true, "b": true}})
	for _, c := range got.Clusters {
		assert.NotEqual(t, hub.ReasonReplicaGone, c.Reason, "%s: b is alive", c.Cluster)
	}
}
