//go:build integration

package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// outage is how long the hub's API server is frozen.
const outage = 2 * time.Minute

// catchUp bounds how long after the hub's API server is back the hub
// shows the truth again.
const catchUp = 10 * time.Second

// While the hub's API server is frozen for two minutes, the pull spoke
// goes on: instances are created, repaired and deleted, and an agent
// that restarts meanwhile serves what it kept. Once the server is back,
// the hub shows the truth within ten seconds, the cluster never shows
// Unreachable (the hub judges no heartbeat it could not read), and no
// assignment, revision or served version moved.
func TestAgentServesWhileTheHubIsAway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := fgtesting.StartFleet(t, 1) // its own: its hub's API server is frozen
	pulled := fleet.Spokes()[0]
	h, _ := startHub(t, fleet.Hub.Config, fgtesting.NewProvider(), sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	hubCfg := join(t, fleet.Hub, "edge-1", nil)
	stopAgent := startAgent(t, "edge-1", hubCfg, pulled)
	require.NoError(t, h.RegisterGraph(ctx, beaconRGD(t, "lantern", "Lantern", "1")))
	gvk := gvkOf("Lantern")
	spoke := newClient(t, pulled.Config)
	createWhenServed(t, pulled.Config, instance(gvk, "one", "green"))
	requireState(t, pulled.Config, gvk, "one", "ACTIVE")
	requireCounts(t, h, "lantern", "edge-1", 1, wait)
	hub := newClient(t, fleet.Hub.Config)
	before := &fgv1alpha1.GraphAssignment{}
	key := client.ObjectKey{Namespace: fgv1alpha1.PullNamespace("edge-1"), Name: "lantern"}
	require.NoError(t, hub.Get(ctx, key, before))

	require.NoError(t, fleet.Hub.Pause())
	pausedAt := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = fleet.Hub.Resume()
		}
	})

	createWhenServed(t, pulled.Config, instance(gvk, "two", "blue"))
	requireState(t, pulled.Config, gvk, "two", "ACTIVE")
	require.NoError(t, spoke.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one-beacon"}}))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := configMap(spoke, "one-beacon")
		assert.NoError(ct, err)
	}, wait, tick, "the deleted child is repaired")

	stopAgent() // an agent that restarts while the hub is away serves what it kept
	startAgent(t, "edge-1", hubCfg, pulled)
	createWhenServed(t, pulled.Config, instance(gvk, "three", "red"))
	requireState(t, pulled.Config, gvk, "three", "ACTIVE")
	require.NoError(t, spoke.Delete(ctx, instance(gvk, "two", "")))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := configMap(spoke, "two-beacon")
		assert.True(ct, apierrors.IsNotFound(err), "the deleted instance's child goes: %v", err)
		assert.Empty(ct, stateOf(spoke, gvk, "two"))
	}, wait, tick, "a deleted instance is finalized")
	require.Less(t, time.Since(pausedAt), outage, "the spoke's work was done while the hub was away")

	time.Sleep(time.Until(pausedAt.Add(outage))) // the outage's length is what is tested
	require.NoError(t, fleet.Hub.Resume())
	resumed = true
	requireCounts(t, h, "lantern", "edge-1", 2, catchUp)

	after := &fgv1alpha1.GraphAssignment{}
	require.NoError(t, hub.Get(ctx, key, after))
	assert.Equal(t, before.Generation, after.Generation, "the assignment did not move")
	assert.Equal(t, int64(1), after.Spec.Revision)
	revs := &fgv1alpha1.GraphRevisionList{}
	require.NoError(t, hub.List(ctx, revs))
	assert.Len(t, revs.Items, 1, "no revision was issued")
	rep := &fgv1alpha1.GraphReport{}
	require.NoError(t, hub.Get(ctx, key, rep))
	require.NotNil(t, rep.Status.Served)
	assert.Equal(t, int64(1), rep.Status.Served.Revision)
	assert.Equal(t, before.Generation, rep.Status.ObservedGeneration)
	// The hub never judged the agent on heartbeats it could not read.
	for range 10 {
		edge, ok := clusterOf(h.FleetStatus("lantern"), "edge-1")
		require.True(t, ok)
		require.NotEqual(t, sdk.CRDUnreachable, edge.CRD, edge.Message)
		time.Sleep(time.Second) // sampling the status over ten seconds is the check
	}
}

// requireCounts waits, up to within, until the hub shows the graph on the
// cluster established with n instances, all ready.
func requireCounts(t *testing.T, h *sdk.Hub, graphName, cluster string, n int, within time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cs, ok := clusterOf(h.FleetStatus(graphName), cluster)
		require.True(ct, ok)
		assert.Equal(ct, sdk.CRDEstablished, cs.CRD, cs.Message)
		assert.Equal(ct, n, cs.Instances)
		assert.Equal(ct, n, cs.ReadyInstances)
	}, within, tick, "the hub shows %d ready instances of %s on %s", n, graphName, cluster)
}
