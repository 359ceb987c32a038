//go:build integration

package sdk_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func fiveServe(rev int64) map[string]int64 {
	return map[string]int64{"spoke-1": rev, "spoke-2": rev, "spoke-3": rev, "spoke-4": rev, "spoke-5": rev}
}

// rollbackWatch samples a manual rollback to revision 1 of graph "floe"
// every 100 ms and checks, at every sample, that no cluster of the main
// wave serves revision 1 while the canary is not healthy on it, and that
// at most one main cluster is moving (switched to revision 1, its
// instance not yet ACTIVE as revision 1 wrote it). Revision 1 needs green
// instances and every instance starts red: the watch holds the canary
// unhealthy for a while once it switched, and each main cluster for three
// samples, before it turns it green.
type rollbackWatch struct {
	spokes map[string]client.Client
	gvk    schema.GroupVersionKind
	// canaryRed counts the samples the canary was seen on revision 1,
	// not healthy.
	canaryRed int
	seen      map[string]int // samples each main cluster was seen moving
	greened   map[string]bool
	order     []string
	// approved: the main wave waited for its approval and the watch gave
	// it (Hub.Approve).
	approved bool
}

// canaryHolds is how many samples the canary is held unhealthy on
// revision 1 before the watch lets it be healthy.
const canaryHolds = 20

// sample looks once; it reports whether stop holds for the main clusters
// seen moving so far.
func (w *rollbackWatch) sample(t *testing.T, h *sdk.Hub, stop func(w *rollbackWatch) bool) bool {
	t.Helper()
	main := maps.Clone(w.spokes)
	delete(main, "spoke-1")
	served := servedRevisions(h, "floe")
	var reached []string
	for name, c := range main {
		data, _ := configMapData(c, "app-tide")
		if served[name] == 1 || data["version"] == "1" {
			reached = append(reached, name)
		}
	}
	moving := movingClusters(h, "floe", main, w.gvk, 1, "1")
	canary := w.spokes["spoke-1"]
	data, _ := configMapData(canary, "app-tide")
	canaryHealthy := data["version"] == "1" && state(canary, w.gvk, "app") == "ACTIVE"
	if len(reached) > 0 {
		require.True(t, canaryHealthy, "%v of the main wave serve revision 1 while the canary is not healthy on it", reached)
	}
	require.LessOrEqual(t, len(moving), 1, "main clusters moving at once: %v", moving)
	if st := rolloutOf(h, "floe"); st.AwaitingApproval == "main" && !w.approved {
		require.Empty(t, reached, "the main wave moved before its approval")
		require.Equal(t, fgv1alpha1.RolloutRollingBack, st.Phase)
		require.NoError(t, h.Approve(context.Background(), "floe", "main"))
		w.approved = true
	}
	if data["version"] == "1" && !canaryHealthy && w.canaryRed < canaryHolds {
		if w.canaryRed++; w.canaryRed == canaryHolds {
			setColor(t, canary, w.gvk, "app", "green")
		}
	}
	for _, name := range moving {
		if w.seen[name] == 0 {
			w.order = append(w.order, name)
		}
		w.seen[name]++
	}
	if stop(w) {
		return true
	}
	for _, name := range moving {
		if w.seen[name] >= 3 && !w.greened[name] {
			w.greened[name] = true
			setColor(t, w.spokes[name], w.gvk, "app", "green")
		}
	}
	return false
}

// watch samples until stop holds.
func (w *rollbackWatch) watch(t *testing.T, h *sdk.Hub, stop func(w *rollbackWatch) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * wait)
	samples := time.NewTicker(sample)
	defer samples.Stop()
	for range samples.C {
		require.True(t, time.Now().Before(deadline), "moved %v; status %+v", w.order, rolloutOf(h, "floe"))
		if w.sample(t, h, stop) {
			return
		}
	}
}

// movesOnly reports whether the status lets name move and no cluster
// that has not started yet: only name, or name and the clusters that
// moved before it (a restarted hub counts a moved cluster as moving again
// until it sees it healthy again).
func movesOnly(st fgv1alpha1.GraphRolloutStatus, name string) bool {
	lets := false
	for _, m := range st.Moving {
		switch {
		case m.Name == name:
			lets = true
		case m.Name > name: // in name order: it has not started yet
			return false
		}
	}
	return lets
}

// A manual rollback in waves (Hub.RollBackInWaves) on five spokes: the
// canary takes revision 1 first and the main wave only once the canary is
// healthy on revision 1 (its instance was Ready under revision 2, which
// does not count); the main wave, with maxConcurrency 1, moves one cluster
// at a time, once approved. A hub restarted while the second main cluster moves resumes
// at the same wave, with the same cluster moving and the others on
// revision 2. The rollback ends RolledBack with reason Manual, revision 1
// stable and every instance ACTIVE as revision 1 wrote it.
func TestManualRollbackInWavesMovesWaveByWaveAndSurvivesARestart(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 5) // its own: the rollout controller reads every GraphRollout on its hub cluster, and the hub restarts
	ctx := context.Background()
	main := map[string]string{"ring": "main"}
	labels := map[string]map[string]string{"spoke-1": {"ring": "canary"}, "spoke-2": main, "spoke-3": main, "spoke-4": main, "spoke-5": main}
	spokes := clientsOf(t, fleet)
	opts := sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}}
	h, stop := startStoppableHub(t, fleet.Hub.Config, newLabelledProvider(t, fleet, labels), opts)
	gvk := webAppGVK.GroupVersion().WithKind("Floe")
	applyRollout(t, fleet.Hub.Config, "floe", twoWaves("floe", nil))
	require.NoError(t, h.RegisterGraph(ctx, tideRGD(t, "floe", "Floe", "1", "green")))
	for _, c := range spokes {
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"color": "green"}))
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	requireRollout(t, h, "floe", fgv1alpha1.RolloutComplete, fiveServe(1))
	rev2 := tideRGD(t, "floe", "Floe", "2", "")
	require.NoError(t, h.RegisterGraph(ctx, rev2))
	requireRollout(t, h, "floe", fgv1alpha1.RolloutComplete, fiveServe(2))
	for _, c := range spokes {
		requireVersion(t, c, "app", "2")
		setColor(t, c, gvk, "app", "red") // revision 2 does not care; revision 1 needs green
	}

	spec := twoWaves("floe", map[string]any{"progressDeadlineSeconds": int64(300)})
	spec["waves"].([]any)[1].(map[string]any)["maxConcurrency"] = int64(1)
	spec["waves"].([]any)[1].(map[string]any)["approval"] = fgv1alpha1.ApprovalRequired
	applyRollout(t, fleet.Hub.Config, "floe", spec)
	require.NoError(t, h.RollBackInWaves(ctx, "floe", 1))
	w := &rollbackWatch{spokes: spokes, gvk: gvk, seen: map[string]int{}, greened: map[string]bool{}}
	// Up to the second main cluster moving (held red): restart there.
	w.watch(t, h, func(w *rollbackWatch) bool { return len(w.order) == 2 && w.seen[w.order[1]] >= 3 })
	require.Equal(t, canaryHolds, w.canaryRed, "the canary was held unhealthy on revision 1 while the main wave waited")
	require.True(t, w.approved, "the main wave waited for its approval")
	hubClient := newClient(t, fleet.Hub.Config)
	mid := map[string]int64{"spoke-1": 1, "spoke-2": 1, "spoke-3": 1, "spoke-4": 2, "spoke-5": 2}
	resumed := func(st fgv1alpha1.GraphRolloutStatus) bool {
		return st.Phase == fgv1alpha1.RolloutRollingBack && st.ManualRollback != nil && st.ManualRollback.Wave == 1 &&
			st.ManualRollback.WaveName == "main" && st.RollbackReason == fgv1alpha1.RollbackReasonManual &&
			st.StableRevision == 2 && st.TargetRevision == 1 && movesOnly(st, "spoke-3")
	}
	require.Equal(t, []string{"spoke-2", "spoke-3"}, w.order)
	require.True(t, resumed(rolloutStatus(t, hubClient, "floe")), "status before the restart: %+v", rolloutStatus(t, hubClient, "floe"))

	stop()
	h2, _ := startStoppableHub(t, fleet.Hub.Config, newLabelledProvider(t, fleet, labels), opts)
	require.NoError(t, h2.RegisterGraph(ctx, rev2))
	requireRollout(t, h2, "floe", fgv1alpha1.RolloutRollingBack, mid)
	require.Never(t, func() bool {
		return !resumed(rolloutStatus(t, hubClient, "floe")) || !assert.ObjectsAreEqual(mid, servedRevisions(h2, "floe"))
	}, holdWindow, tick, "the restarted hub did not resume at the same wave: %+v", rolloutOf(h2, "floe"))
	requireVersion(t, spokes["spoke-4"], "app", "2")

	w.watch(t, h2, func(*rollbackWatch) bool { return rolloutOf(h2, "floe").Phase == fgv1alpha1.RolloutRolledBack })
	assert.Equal(t, []string{"spoke-2", "spoke-3", "spoke-4", "spoke-5"}, w.order, "the main wave moved one cluster at a time, in name order")
	requireRollout(t, h2, "floe", fgv1alpha1.RolloutRolledBack, fiveServe(1))
	for _, c := range spokes {
		requireVersion(t, c, "app", "1")
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	st := rolloutStatus(t, hubClient, "floe")
	assert.Equal(t, int64(1), st.StableRevision)
	assert.Equal(t, fgv1alpha1.RollbackReasonManual, st.RollbackReason)
	assert.Equal(t, "done", st.ManualRollback.WaveName)
	assert.Equal(t, "rolled back to revision 1, wave by wave (manual, from revision 2)", st.Message)
	require.Len(t, st.Approvals, 1)
	assert.Equal(t, int64(1), st.Approvals[0].Revision, "the approval is for the revision rolled back to")
	assert.Equal(t, "main", st.Approvals[0].Wave)
	requireEvents(t, fleet, "floe", "ManualRollbackStarted", "AwaitingApproval", "Approved", "WaveRolledBack", "RolledBack")
	requireEventWith(t, fleet, "floe", "WaveRolledBack", `wave "main" rolled back to revision 1 (manual rollback)`)
}
