//go:build integration

package testing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// Each context of a real fleet's merged kubeconfig reaches the API server
// of the cluster it is named after: the kube-system namespace it reads is
// that cluster's (its UID is what the cluster's own Config reads).
func TestAFleetsMergedKubeconfigReachesEachCluster(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 2)
	files, err := fgtesting.WriteKubeconfigs(t.TempDir(), fleet.Clusters()...)
	require.NoError(t, err)
	merged, err := clientcmd.LoadFromFile(files.Merged)
	require.NoError(t, err)
	assert.Equal(t, "hub", merged.CurrentContext)

	ctx := context.Background()
	uids := map[string]bool{}
	for _, c := range fleet.Clusters() {
		direct, err := client.New(c.Config, client.Options{})
		require.NoError(t, err)
		want := &corev1.Namespace{}
		require.NoError(t, direct.Get(ctx, client.ObjectKey{Name: "kube-system"}, want))

		rc, err := files.RESTConfig(c.Name)
		require.NoError(t, err, c.Name)
		viaContext, err := client.New(rc, client.Options{})
		require.NoError(t, err)
		got := &corev1.Namespace{}
		require.NoError(t, viaContext.Get(ctx, client.ObjectKey{Name: "kube-system"}, got), "context %s", c.Name)
		assert.Equal(t, want.UID, got.UID, "context %s reaches cluster %s", c.Name, c.Name)
		uids[string(got.UID)] = true
	}
	assert.Len(t, uids, 3, "three clusters, three API servers")
}
