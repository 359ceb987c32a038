//go:build integration

package testing_test

import (
	"context"
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
