//go:build integration

package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A spoke the hub process cannot reach (its transport refuses the
// spoke's address) serves a graph through its agent, beside a pushed
// spoke: the CRD is installed there, instances go ACTIVE with the
// cluster's name, and the hub shows the CRD state, counts and revision
// the agent reports; a new revision reaches it the same way.
func TestPullClusterServesAGraphThroughItsAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := fgtesting.StartFleet(t, 2) // its own: the hub serves every PullCluster on its hub cluster
	pushed, pulled := fleet.Spokes()[0], fleet.Spokes()[1]
	hubCfg, refused := refusing(fleet.Hub.Config, pulled)
	provider := fgtesting.NewProvider()
	require.NoError(t, provider.AddConfig(ctx, pushed.Name, pushed.Config))
	h, _ := startHub(t, hubCfg, provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
	hub := newClient(t, fleet.Hub.Config)

	startAgent(t, "edge-1", join(t, fleet.Hub, "edge-1", map[string]string{"site": "edge"}), pulled)
	rgd := beaconRGD(t, "beacon", "Beacon", "1")
	require.NoError(t, hub.Create(ctx, rgd))
	gvk := gvkOf("Beacon")

	createWhenServed(t, pulled.Config, instance(gvk, "lamp", "green"))
	createWhenServed(t, pushed.Config, instance(gvk, "lamp", "blue"))
	requireState(t, pulled.Config, gvk, "lamp", "ACTIVE")
	requireState(t, pushed.Config, gvk, "lamp", "ACTIVE")
	data, err := configMap(newClient(t, pulled.Config), "lamp-beacon")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"color": "green", "cluster": "edge-1", "version": "1"}, data,
		"cluster.name is the PullCluster's name")

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := h.FleetStatus("beacon")
		edge, ok := clusterOf(st, "edge-1")
		require.True(ct, ok, "the pull cluster is in the fleet status: %+v", st)
		assert.Equal(ct, sdk.CRDEstablished, edge.CRD, edge.Message)
		assert.True(ct, edge.Serving)
		assert.Equal(ct, 1, edge.Instances)
		assert.Equal(ct, 1, edge.ReadyInstances)
		other, ok := clusterOf(st, pushed.Name)
		require.True(ct, ok)
		assert.Equal(ct, 1, other.ReadyInstances)
	}, wait, tick, "the hub shows what the agent reports")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, hub.Get(ctx, client.ObjectKeyFromObject(rgd), got))
		require.NotNil(ct, got.Status.Fleet)
		assert.Equal(ct, int32(2), got.Status.Fleet.Clusters)
		assert.Equal(ct, int32(2), got.Status.Fleet.Established)
		assert.Equal(ct, int64(2), got.Status.Fleet.ReadyInstances)
	}, wait, tick, "the RGD's status counts the pull cluster")
	f := cliStatus(t, fleet.Hub, "beacon")
	require.Len(t, f.Graphs, 1)
	assert.Equal(t, int32(2), f.Graphs[0].ClusterCount, "fleetgraph status counts the pull cluster: %+v", f.Graphs[0])
	assert.Equal(t, int64(2), f.Graphs[0].ReadyInstances)

	// A new revision reaches the pull cluster through its assignment.
	require.NoError(t, hub.Get(ctx, client.ObjectKeyFromObject(rgd), rgd))
	rgd.Spec = beaconRGD(t, "beacon", "Beacon", "2").Spec
	require.NoError(t, hub.Update(ctx, rgd))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		data, err := configMap(newClient(t, pulled.Config), "lamp-beacon")
		require.NoError(ct, err)
		assert.Equal(ct, "2", data["version"])
		rep := &fgv1alpha1.GraphReport{}
		require.NoError(ct, hub.Get(ctx, client.ObjectKey{Namespace: fgv1alpha1.PullNamespace("edge-1"), Name: "beacon"}, rep))
		require.NotNil(ct, rep.Status.Served)
		assert.Equal(ct, int64(2), rep.Status.Served.Revision)
		assert.Equal(ct, int64(2), rep.Status.AssignedRevision)
	}, wait, tick, "revision 2 serves the pull cluster")
	assert.Zero(t, refused.attempts.Load(), "the hub process never tried to reach the pull spoke")
}
