//go:build integration

package testing_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A cluster whose servers are stopped and started again with its etcd
// emptied answers at the same address, to the same credentials, as a
// fresh cluster: what it held is gone, what an API server creates at
// start is back.
func TestAClusterRestartedEmptyAnswersAtTheSameAddress(t *testing.T) {
	t.Parallel()
	c, err := fgtesting.StartCluster("rebuilt", fgtesting.ClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Stop()) })
	cl, err := client.New(c.Config, client.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	cm.Name, cm.Namespace = "before", "default"
	require.NoError(t, cl.Create(ctx, cm))
	ns := &corev1.Namespace{}
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Name: "kube-system"}, ns))
	uid := ns.UID

	require.NoError(t, c.StopServers())
	require.Error(t, cl.Get(ctx, client.ObjectKey{Name: "kube-system"}, ns), "stopped")
	require.NoError(t, c.StartServers(true))

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := &corev1.Namespace{}
		require.NoError(ct, cl.Get(ctx, client.ObjectKey{Name: "kube-system"}, got), "the same client reaches it")
		assert.NotEqual(ct, uid, got.UID, "a new kube-system: the data was emptied")
	}, time.Minute, 100*time.Millisecond)
	err = cl.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "what it held is gone: %v", err)
}

// A cluster restored from a snapshot of its etcd taken earlier answers at
// the same address as it was then: what was written after the snapshot is
// gone, what it held is back, and its resourceVersions went back.
func TestAClusterRestoredFromASnapshotIsAsItWasThen(t *testing.T) {
	t.Parallel()
	c, err := fgtesting.StartCluster("restored", fgtesting.ClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Stop()) })
	cl, err := client.New(c.Config, client.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	before := &corev1.ConfigMap{}
	before.Name, before.Namespace = "before", "default"
	require.NoError(t, cl.Create(ctx, before))

	require.NoError(t, c.StopServers())
	snapshot, err := c.SnapshotData()
	require.NoError(t, err)
	require.NoError(t, c.StartServers(false))
	after := &corev1.ConfigMap{}
	after.Name, after.Namespace = "after", "default"
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, cl.Create(ctx, after.DeepCopy()))
	}, time.Minute, 100*time.Millisecond, "the cluster answers again with its data")
	// Writes after the snapshot, so many that the restored cluster's own
	// writes as it starts do not make up for them.
	for i := range 50 {
		require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(after), after))
		after.Data = map[string]string{"n": strconv.Itoa(i)}
		require.NoError(t, cl.Update(ctx, after))
	}
	latest := &corev1.ConfigMapList{}
	require.NoError(t, cl.List(ctx, latest))

	require.NoError(t, c.StopServers())
	require.NoError(t, c.StartServersFrom(snapshot))
	restored := &corev1.ConfigMapList{}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, cl.List(ctx, restored))
	}, time.Minute, 100*time.Millisecond)
	assert.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(before), &corev1.ConfigMap{}), "what the snapshot held is back")
	err = cl.Get(ctx, client.ObjectKeyFromObject(after), &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "what was written after the snapshot is gone: %v", err)
	assert.Less(t, resourceVersion(t, restored.ResourceVersion), resourceVersion(t, latest.ResourceVersion), "the resourceVersions went back")
}

// resourceVersion parses an etcd-backed resourceVersion.
func resourceVersion(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	require.NoError(t, err)
	return n
}
