//go:build integration

package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A two-wave GraphRollout across two pushed and two pull clusters, one
// of each kind per wave: a good revision goes through the canary wave,
// waits for the main wave's approval, and completes once approved; a
// revision that is never ready on the canary pull cluster (as its agent
// reports) fails its wave and is rolled back on every cluster it
// reached. The pull clusters are judged on their own reports.
func TestRolloutAcrossPushedAndPullClusters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := fgtesting.StartFleet(t, 4) // its own: the rollout controller reads every GraphRollout on its hub cluster
	spokes := fleet.Spokes()
	pushedCanary, pulledCanary, pushedMain, pulledMain := spokes[0], spokes[1], spokes[2], spokes[3]
	inner := fgtesting.NewProvider()
	require.NoError(t, inner.AddConfig(ctx, pushedCanary.Name, pushedCanary.Config))
	require.NoError(t, inner.AddConfig(ctx, pushedMain.Name, pushedMain.Config))
	provider := &labelledProvider{Provider: inner, labels: map[string]map[string]string{
		pushedCanary.Name: {"ring": "canary"}, pushedMain.Name: {"ring": "main"},
	}}
	hubCfg, refused := refusing(fleet.Hub.Config, pulledCanary, pulledMain)
	h, _ := startHub(t, hubCfg, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: 200 * time.Millisecond}})
	startAgent(t, "edge-canary", join(t, fleet.Hub, "edge-canary", map[string]string{"ring": "canary"}), pulledCanary)
	startAgent(t, "edge-main", join(t, fleet.Hub, "edge-main", map[string]string{"ring": "main"}), pulledMain)
	all := []*fgtesting.Cluster{pushedCanary, pulledCanary, pushedMain, pulledMain}
	names := map[*fgtesting.Cluster]string{pushedCanary: pushedCanary.Name, pulledCanary: "edge-canary", pushedMain: pushedMain.Name, pulledMain: "edge-main"}

	applyRollout(t, fleet.Hub.Config, "flare", map[string]any{
		"graph": "flare",
		"waves": []any{
			map[string]any{"name": "canary", "clusterSelector": map[string]any{"matchLabels": map[string]any{"ring": "canary"}}},
			map[string]any{"name": "main", "percent": int64(100), "approval": fgv1alpha1.ApprovalRequired},
		},
		"health":                  map[string]any{"readyPercent": int64(100), "soakSeconds": int64(1)},
		"progressDeadlineSeconds": int64(20),
		"onFailure":               fgv1alpha1.OnFailureRollback,
	})
	gvk := gvkOf("Flare")
	serves := func(rev int64) map[string]int64 {
		out := map[string]int64{}
		for _, c := range all {
			out[names[c]] = rev
		}
		return out
	}

	// Revision 1, the first, goes everywhere at once.
	require.NoError(t, h.RegisterGraph(ctx, beaconRGD(t, "flare", "Flare", "1")))
	for _, c := range all {
		createWhenServed(t, c.Config, instance(gvk, "torch", "green"))
		requireState(t, c.Config, gvk, "torch", "ACTIVE")
	}
	requireRollout(t, h, "flare", fgv1alpha1.RolloutComplete, serves(1))

	// Revision 2: the canary wave, then a wait for approval with the main
	// wave still on revision 1, then the main wave.
	require.NoError(t, h.RegisterGraph(ctx, beaconRGD(t, "flare", "Flare", "2")))
	requireAwaitingApproval(t, h, "flare", 2)
	waiting := map[string]int64{pushedCanary.Name: 2, "edge-canary": 2, pushedMain.Name: 1, "edge-main": 1}
	requireRollout(t, h, "flare", fgv1alpha1.RolloutProgressing, waiting)
	requireVersion(t, pulledCanary.Config, "torch", "2")
	requireVersion(t, pulledMain.Config, "torch", "1")
	require.NoError(t, h.Approve(ctx, "flare", "main"))
	requireRollout(t, h, "flare", fgv1alpha1.RolloutComplete, serves(2))
	requireVersion(t, pulledMain.Config, "torch", "2")

	// Revision 3 is never ready on the canary pull cluster: its agent's
	// report fails the canary wave, and the revision goes back.
	require.NoError(t, h.RegisterGraph(ctx, beaconRGDReadyWhen(t, "flare", "Flare", "3", `config.data.cluster != "edge-canary"`)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, int64(3), servedBy(h, "flare")[pushedCanary.Name])
	}, wait, tick, "revision 3 reaches the canary wave")
	requireRollout(t, h, "flare", fgv1alpha1.RolloutRolledBack, serves(2))
	requireVersion(t, pulledCanary.Config, "torch", "2")
	requireVersion(t, pulledMain.Config, "torch", "2")
	st, _ := h.Rollout("flare")
	assert.Equal(t, int64(3), st.TargetRevision)
	assert.Equal(t, int64(2), st.StableRevision)
	assert.Contains(t, st.Message, "edge-canary", "the rollout names the pull cluster that failed it")
	assert.Zero(t, refused.attempts.Load(), "the hub process never tried to reach a pull spoke")
}

// servedBy is the revision serving each cluster, as the graph's rollout
// observes it.
func servedBy(h *sdk.Hub, graphName string) map[string]int64 {
	st, _ := h.Rollout(graphName)
	out := map[string]int64{}
	for _, c := range st.Clusters {
		out[c.Name] = c.Revision
	}
	return out
}

// requireRollout waits until the graph's rollout has the phase and each
// cluster serves the given revision.
func requireRollout(t *testing.T, h *sdk.Hub, graphName, phase string, revs map[string]int64) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st, ok := h.Rollout(graphName)
		require.True(ct, ok)
		assert.Equal(ct, phase, st.Phase, st.Message)
		assert.Equal(ct, revs, servedBy(h, graphName))
	}, 2*wait, tick, "rollout of %s: %s with %v", graphName, phase, revs)
}

// requireAwaitingApproval waits until the rollout's main wave awaits the
// approval of revision rev.
func requireAwaitingApproval(t *testing.T, h *sdk.Hub, graphName string, rev int64) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st, ok := h.Rollout(graphName)
		require.True(ct, ok)
		assert.Equal(ct, rev, st.TargetRevision)
		assert.Equal(ct, "main", st.AwaitingApproval, st.Message)
	}, 2*wait, tick, "revision %d awaits the main wave's approval", rev)
}

// requireVersion waits until the instance's ConfigMap is written by the
// given version of the graph.
func requireVersion(t *testing.T, cfg *rest.Config, inst, version string) {
	t.Helper()
	c := newClient(t, cfg)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		data, err := configMap(c, inst+"-beacon")
		require.NoError(ct, err)
		assert.Equal(ct, version, data["version"])
	}, wait, tick, "%s is written by version %s", inst, version)
}

// applyRollout applies a GraphRollout, with a new client each attempt (the
// kind may be new to the hub).
func applyRollout(t testing.TB, cfg *rest.Config, name string, spec map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName(name)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c, err := client.New(cfg, client.Options{})
		require.NoError(ct, err)
		assert.NoError(ct, c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()),
			client.FieldOwner("test"), client.ForceOwnership))
	}, wait, tick, "applying GraphRollout %s", name)
}
