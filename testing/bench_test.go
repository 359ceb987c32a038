//go:build integration

package testing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// Each cluster's CPU is read from its own kube-apiserver and etcd, found
// by their ports among the two fleets' processes, and grows with the work
// it is given; its load (from its metrics) counts that work by request.
func TestClusterCPUAndLoadAreEachClustersOwn(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1)
	hub, spoke := fleet.Hub, fleet.Spokes()[0]
	hubPID, err := hub.APIServerPID()
	require.NoError(t, err)
	spokePID, err := spoke.APIServerPID()
	require.NoError(t, err)
	etcdPID, err := hub.EtcdPID()
	require.NoError(t, err)
	assert.NotEqual(t, hubPID, spokePID)
	assert.NotEqual(t, hubPID, etcdPID)

	before, err := hub.CPU()
	require.NoError(t, err)
	loadBefore, err := hub.Load(context.Background())
	require.NoError(t, err)
	assert.Positive(t, before.APIServer, "a started API server has used CPU")
	c, err := client.New(fgtesting.NoRateLimit(hub.Config), client.Options{})
	require.NoError(t, err)
	for i := range 200 {
		require.NoError(t, c.Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cpu-%03d", i)},
		}))
	}
	after, err := hub.CPU()
	require.NoError(t, err)
	used := after.Sub(before)
	assert.Positive(t, used.APIServer, "200 creates cost the API server CPU: %s", used)
	assert.Positive(t, used.Etcd, "200 creates cost etcd CPU: %s", used)
	loadAfter, err := hub.Load(context.Background())
	require.NoError(t, err)
	load := loadAfter.Sub(loadBefore)
	assert.InDelta(t, 200, load.Requests["POST configmaps"], 0, "%s", load)
	assert.Positive(t, load.RequestSeconds["POST configmaps"], "%s", load)
	spokeLoad, err := spoke.Load(context.Background())
	require.NoError(t, err)
	assert.Less(t, spokeLoad.Requests["POST configmaps"], 200.0, "the spoke's server saw none of the hub's creates")
}
