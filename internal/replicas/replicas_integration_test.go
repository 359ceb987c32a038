//go:build integration

package replicas

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fleetgraph/fleetgraph/hub"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// TestReplicaStatusPrunesDeadReplicas: on a real hub, merging deletes the
// records that stopped being renewed, of a replica that is gone (killed,
// scaled away) or of a graph that was deleted (this replica's own too), so
// that they neither count nor pile up; a live replica's record and a
// look-alike ConfigMap that is not ours stay, and a record renewed after
// it was read is not deleted on the strength of the stale read. Forget
// deletes the own record of a removed graph at once.
func TestReplicaStatusPrunesDeadReplicas(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 0)
	ctx := context.Background()
	c, err := client.New(fleet.Hub.Config, client.Options{})
	require.NoError(t, err)
	now := time.Now()
	create := func(cm corev1.ConfigMap, name string, managed bool) *corev1.ConfigMap {
		cm.Namespace, cm.Name = "default", name
		cm.Labels[LabelFleetStatusOf] = strings.Split(name, "-")[1]
		if managed {
			cm.Labels[contract.LabelManagedBy] = contract.ManagedBy
		}
		require.NoError(t, c.Create(ctx, &cm))
		return &cm
	}
	dead := create(replicaRecord(t, "dead", now.Add(-2*time.Minute), hub.ClusterStatus{Cluster: "c9", Instances: 9}), "fleetgraph-g-dead", true)
	live := create(replicaRecord(t, "live", now, hub.ClusterStatus{Cluster: "c2", Instances: 2}), "fleetgraph-g-live", true)
	notOurs := create(replicaRecord(t, "other", now.Add(-2*time.Minute)), "someone-elses", false)
	deletedGraph := create(replicaRecord(t, "live", now.Add(-2*time.Minute), hub.ClusterStatus{Cluster: "c2"}), "fleetgraph-gone-live", true)
	ownDeletedGraph := create(replicaRecord(t, "a", now.Add(-2*time.Minute), hub.ClusterStatus{Cluster: "c1"}), "fleetgraph-old-a", true)
	r := &Status{Client: c, Namespace: "default", Replica: "a", TTL: time.Minute}

	got, err := r.Merged(ctx, hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1", Instances: 1}}})

	require.NoError(t, err)
	assert.Equal(t, []hub.ClusterStatus{{Cluster: "c1", Instances: 1}, {Cluster: "c2", Instances: 2}}, got.Clusters)
	for _, gone := range []*corev1.ConfigMap{dead, deletedGraph, ownDeletedGraph} {
		err = c.Get(ctx, client.ObjectKeyFromObject(gone), &corev1.ConfigMap{})
		assert.True(t, apierrors.IsNotFound(err), "expired record %s is deleted, got %v", gone.Name, err)
	}
	for _, kept := range []*corev1.ConfigMap{live, notOurs} {
		assert.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(kept), &corev1.ConfigMap{}), "%s stays", kept.Name)
	}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "fleetgraph-g-a"}, &corev1.ConfigMap{}), "own record written")

	stale := live.DeepCopy()
	stale.Annotations[AnnotationRenewed] = now.Add(-2 * time.Minute).Format(time.RFC3339Nano)
	renewedMeanwhile := live.DeepCopy()
	renewedMeanwhile.Annotations[AnnotationRenewed] = time.Now().Format(time.RFC3339Nano)
	require.NoError(t, c.Update(ctx, renewedMeanwhile))
	require.NoError(t, r.prune(ctx, []metav1.PartialObjectMetadata{{ObjectMeta: stale.ObjectMeta}}))
	assert.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(live), &corev1.ConfigMap{}), "a record renewed after the read stays")

	require.NoError(t, r.Forget(ctx, "g"))
	err = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "fleetgraph-g-a"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "a removed graph's own record is deleted at once, got %v", err)
	require.NoError(t, r.Forget(ctx, "g"), "forgetting twice is no error")
	_, err = r.Merged(ctx, hub.GraphStatus{Graph: "g", Clusters: []hub.ClusterStatus{{Cluster: "c1", Instances: 1}}})
	require.NoError(t, err)
	assert.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "fleetgraph-g-a"}, &corev1.ConfigMap{}),
		"a graph registered again is published again, not skipped as unchanged")
}

// TestReplicaStatusLeavesObjectsItDidNotWrite: a ConfigMap that has the
// name of this replica's record but was not written by it (a tenant's,
// or another replica's under a colliding name) is neither overwritten by
// a publish nor deleted by Forget.
func TestReplicaStatusLeavesObjectsItDidNotWrite(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 0)
	ctx := context.Background()
	c, err := client.New(fleet.Hub.Config, client.Options{})
	require.NoError(t, err)
	theirs := map[string]*corev1.ConfigMap{
		"unlabelled": {ObjectMeta: metav1.ObjectMeta{Name: "fleetgraph-h-a"}},
		"other replica": {ObjectMeta: metav1.ObjectMeta{Name: "fleetgraph-k-a", Labels: map[string]string{
			contract.LabelManagedBy: contract.ManagedBy, LabelReplica: "b", LabelFleetStatusOf: "k"}}},
	}
	graphs := map[string]string{"unlabelled": "h", "other replica": "k"}
	r := &Status{Client: c, Namespace: "default", Replica: "a", TTL: time.Minute}
	for what, cm := range theirs {
		cm.Namespace, cm.Data = "default", map[string]string{"mine": what}
		require.NoError(t, c.Create(ctx, cm))

		_, err := r.Merged(ctx, hub.GraphStatus{Graph: graphs[what], Clusters: []hub.ClusterStatus{{Cluster: "c1"}}})
		require.ErrorIs(t, err, ErrNotOurRecord, what)
		require.NoError(t, r.Forget(ctx, graphs[what]), what)

		got := &corev1.ConfigMap{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(cm), got), "%s: not deleted", what)
		assert.Equal(t, map[string]string{"mine": what}, got.Data, "%s: not overwritten", what)
		assert.Equal(t, cm.Labels, got.Labels, "%s: not relabelled", what)
	}
}
