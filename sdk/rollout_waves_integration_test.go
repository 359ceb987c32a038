//go:build integration

package sdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// rolloutResync keeps the tests' rollouts moving quickly.
const rolloutResync = 200 * time.Millisecond

// twoWaves is a rollout of graphName: the canary ring first, then the
// rest. Each wave must have every instance Ready for a second.
func twoWaves(graphName string, extra map[string]any) map[string]any {
	spec := map[string]any{
		"graph": graphName,
		"waves": []any{
			map[string]any{"name": "canary", "clusterSelector": map[string]any{"matchLabels": map[string]any{"ring": "canary"}}},
			map[string]any{"name": "main", "percent": int64(100)},
		},
		"health": map[string]any{"readyPercent": int64(100), "soakSeconds": int64(1)},
	}
	for k, v := range extra {
		spec[k] = v
	}
	return spec
}

// ringFleet starts 4 spokes, spoke-1 in the canary ring, and a provider
// labelling them so.
func ringFleet(t *testing.T) (*fgtesting.Fleet, *labelledProvider, map[string]client.Client) {
	fleet := fgtesting.StartFleet(t, 4) // its own: the rollout controller reads every GraphRollout on its hub cluster
	main := map[string]string{"ring": "main"}
	provider := newLabelledProvider(t, fleet, map[string]map[string]string{
		"spoke-1": {"ring": "canary"}, "spoke-2": main, "spoke-3": main, "spoke-4": main,
	})
	return fleet, provider, clientsOf(t, fleet)
}

func allServe(rev int64) map[string]int64 {
	return map[string]int64{"spoke-1": rev, "spoke-2": rev, "spoke-3": rev, "spoke-4": rev}
}

// requireRollout waits until the hub's view of the graph's rollout has the
// phase and each cluster serves the given revision.
func requireRollout(t *testing.T, h *sdk.Hub, graphName, phase string, revs map[string]int64) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st, ok := h.Rollout(graphName)
		require.True(ct, ok)
		assert.Equal(ct, phase, st.Phase, st.Message)
		assert.Equal(ct, revs, servedRevisions(h, graphName), "fleet: %v", served(h, graphName))
	}, wait, tick, "rollout of %s: %s with %v", graphName, phase, revs)
}

func setColor(t *testing.T, c client.Client, gvk schema.GroupVersionKind, name, color string) {
	t.Helper()
	obj := instance(gvk, name, nil)
	patch := []byte(`{"spec":{"color":"` + color + `"}}`)
	require.NoError(t, c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, patch)))
}

func requireVersion(t *testing.T, c client.Client, inst, version string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		data, err := configMapData(c, inst+"-tide")
		require.NoError(ct, err)
		assert.Equal(ct, version, data["version"])
	}, wait, tick, "%s is written by version %s", inst, version)
}

// startRing registers revision 1 of the graph with a two-wave rollout and
// one green instance per spoke, all ACTIVE.
func startRing(t *testing.T, fleet *fgtesting.Fleet, h *sdk.Hub, spokes map[string]client.Client, graphName, kind string, extra map[string]any) schema.GroupVersionKind {
	t.Helper()
	gvk := webAppGVK.GroupVersion().WithKind(kind)
	applyRollout(t, fleet.Hub.Config, graphName, twoWaves(graphName, extra))
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, graphName, kind, "1", "")))
	for name, c := range spokes {
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"color": "green"}))
		requireState(t, c, gvk, "app", "ACTIVE")
		requireVersion(t, c, "app", "1")
		_ = name
	}
	requireRollout(t, h, graphName, fgv1alpha1.RolloutComplete, allServe(1))
	return gvk
}

// A compatible change goes out in two waves: the second starts only once
// every instance of the first is Ready (and has soaked).
func TestRolloutWaitsForEachWave(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}})
	gvk := startRing(t, fleet, h, spokes, "ebb", "Ebb", nil)
	canary := spokes["spoke-1"]
	setColor(t, canary, gvk, "app", "red") // revision 1 does not care

	// Revision 2 needs green to be Ready: the canary's instance is not.
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "ebb", "Ebb", "2", "green")))
	requireRollout(t, h, "ebb", fgv1alpha1.RolloutProgressing,
		map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1})
	requireVersion(t, canary, "app", "2")
	requireState(t, canary, gvk, "app", "IN_PROGRESS")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st, _ := h.Rollout("ebb")
		assert.Equal(ct, "canary", st.WaveName)
		require.Len(ct, st.HoldingBack, 1)
		assert.Equal(ct, "spoke-1", st.HoldingBack[0].Name)
		assert.Contains(ct, st.HoldingBack[0].Message, "0 of 1 instances Ready")
	}, wait, tick)
	// The main wave still runs revision 1.
	requireVersion(t, spokes["spoke-2"], "app", "1")
	st, _ := h.Rollout("ebb")
	require.Equal(t, int32(0), st.Wave, "the main wave waits")

	setColor(t, canary, gvk, "app", "green")
	requireRollout(t, h, "ebb", fgv1alpha1.RolloutComplete, allServe(2))
	for _, c := range spokes {
		requireVersion(t, c, "app", "2")
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	hubStatus := rolloutStatus(t, newClient(t, fleet.Hub.Config), "ebb")
	assert.Equal(t, int64(2), hubStatus.TargetRevision)
	assert.Equal(t, int64(2), hubStatus.StableRevision)
	requireEvents(t, fleet, "ebb", "RolloutStarted", "WaveComplete", "RolloutComplete")
}

// A change that breaks readiness fails in the first wave: the rollout
// stops there, the second wave keeps the previous revision, and a rollback
// puts the first wave back on it.
func TestAFailedWavePausesAndRollsBack(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}})
	gvk := startRing(t, fleet, h, spokes, "neap", "Neap", map[string]any{"progressDeadlineSeconds": int64(3)})
	canary := spokes["spoke-1"]

	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "neap", "Neap", "2", "never")))
	requireRollout(t, h, "neap", fgv1alpha1.RolloutFailed,
		map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1})
	st, _ := h.Rollout("neap")
	assert.Contains(t, st.Message, `wave "canary" not healthy`)
	assert.Contains(t, st.Message, "spoke-1: 0 of 1 instances Ready")
	requireState(t, canary, gvk, "app", "IN_PROGRESS")
	for _, name := range []string{"spoke-2", "spoke-3", "spoke-4"} {
		requireVersion(t, spokes[name], "app", "1")
		requireState(t, spokes[name], gvk, "app", "ACTIVE")
	}

	// Resuming retries the wave, which fails again: it still never gets
	// Ready.
	require.NoError(t, h.ResumeRollout(context.Background(), "neap"))
	requireEvents(t, fleet, "neap", "Resumed")
	requireRollout(t, h, "neap", fgv1alpha1.RolloutFailed,
		map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1})

	require.NoError(t, h.RollBack(context.Background(), "neap", 1))
	requireRollout(t, h, "neap", fgv1alpha1.RolloutRolledBack, allServe(1))
	requireVersion(t, canary, "app", "1")
	requireState(t, canary, gvk, "app", "ACTIVE")
	requireEvents(t, fleet, "neap", "RolloutStarted", "WaveFailed", "RolledBack")
	assert.ErrorIs(t, h.RollBack(context.Background(), "no-such-graph", 1), sdk.ErrNoRollout)
}

// A hub that stops mid-rollout and is replaced picks the rollout up where
// it was: the first wave keeps the new revision, the second the old one,
// and the rollout finishes once the first wave is healthy.
func TestARestartedHubResumesTheRollout(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t)
	opts := sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}}
	h, stop := startStoppableHub(t, fleet.Hub.Config, provider, opts)
	gvk := startRing(t, fleet, h, spokes, "surge", "Surge", nil)
	canary := spokes["spoke-1"]
	setColor(t, canary, gvk, "app", "red")
	mid := map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1}
	rev2 := tideRGD(t, "surge", "Surge", "2", "green")
	require.NoError(t, h.RegisterGraph(context.Background(), rev2))
	requireRollout(t, h, "surge", fgv1alpha1.RolloutProgressing, mid)
	stop()

	provider2 := newLabelledProvider(t, fleet, provider.labels)
	h2, _ := startStoppableHub(t, fleet.Hub.Config, provider2, opts)
	require.NoError(t, h2.RegisterGraph(context.Background(), rev2))
	requireRollout(t, h2, "surge", fgv1alpha1.RolloutProgressing, mid)
	requireVersion(t, spokes["spoke-2"], "app", "1")
	st, _ := h2.Rollout("surge")
	assert.Equal(t, "canary", st.WaveName)

	setColor(t, canary, gvk, "app", "green")
	requireRollout(t, h2, "surge", fgv1alpha1.RolloutComplete, allServe(2))
	requireVersion(t, spokes["spoke-4"], "app", "2")
}

func requireEvents(t *testing.T, fleet *fgtesting.Fleet, rollout string, reasons ...string) {
	t.Helper()
	c := newClient(t, fleet.Hub.Config)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		events := &eventsv1.EventList{}
		require.NoError(ct, c.List(context.Background(), events))
		for _, r := range reasons {
			assert.True(ct, hasEvent(events, rollout, r), "event %s on GraphRollout %s", r, rollout)
		}
	}, wait, tick)
}
