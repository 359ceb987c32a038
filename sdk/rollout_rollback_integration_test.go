//go:build integration

package sdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// With onFailure: Rollback, a revision that fails its second wave (one
// spoke of five refuses its child) goes back to the stable revision on
// every cluster it reached, the second wave before the first: the canary
// never serves the stable revision again while a cluster of the failed
// wave still serves the new one. The rollout ends RolledBack with the
// reason in its message and an event, every instance ACTIVE as written by
// the stable revision, and it stays there.
func TestOnFailureRollbackTakesAFailedRevisionBack(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 5) // its own: the rollout controller reads every GraphRollout on its hub cluster
	main := map[string]string{"ring": "main"}
	provider := newLabelledProvider(t, fleet, map[string]map[string]string{
		"spoke-1": {"ring": "canary"}, "spoke-2": main, "spoke-3": main, "spoke-4": main, "spoke-5": main,
	})
	spokes := clientsOf(t, fleet)
	refuseVersion(t, spokes["spoke-5"], "2")
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}})
	gvk := webAppGVK.GroupVersion().WithKind("Eddy")
	spec := twoWaves("eddy", map[string]any{"progressDeadlineSeconds": int64(4), "onFailure": fgv1alpha1.OnFailureRollback})
	applyRollout(t, fleet.Hub.Config, "eddy", spec)
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "eddy", "Eddy", "1", "")))
	for _, c := range spokes {
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"color": "green"}))
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	stable := map[string]int64{"spoke-1": 1, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1, "spoke-5": 1}
	requireRollout(t, h, "eddy", fgv1alpha1.RolloutComplete, stable)

	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "eddy", "Eddy", "2", "")))
	// Watch the whole way: the failed wave reaches revision 2, then goes
	// back before the canary does.
	reached := map[string]bool{}
	deadline := time.Now().Add(2 * wait)
	samples := time.NewTicker(tick)
	defer samples.Stop()
	for range samples.C {
		require.True(t, time.Now().Before(deadline), "not rolled back; reached %v; status %+v", reached, rolloutOf(h, "eddy"))
		served := servedRevisions(h, "eddy")
		for name, rev := range served {
			if rev == 2 {
				reached[name] = true
			}
		}
		if reached["spoke-1"] && served["spoke-1"] == 1 {
			for _, name := range []string{"spoke-2", "spoke-3", "spoke-4", "spoke-5"} {
				require.NotEqual(t, int64(2), served[name], "the canary went back while %s of the failed wave still served revision 2", name)
			}
		}
		if st := rolloutOf(h, "eddy"); st.Phase == fgv1alpha1.RolloutRolledBack {
			break
		}
	}
	assert.True(t, reached["spoke-1"] && reached["spoke-2"], "the revision reached both waves before it failed: %v", reached)
	requireRollout(t, h, "eddy", fgv1alpha1.RolloutRolledBack, stable)
	for name, c := range spokes {
		requireVersion(t, c, "app", "1")
		requireState(t, c, gvk, "app", "ACTIVE")
		_ = name
	}
	hubClient := newClient(t, fleet.Hub.Config)
	st := rolloutStatus(t, hubClient, "eddy")
	assert.Equal(t, int64(2), st.TargetRevision)
	assert.Equal(t, int64(1), st.StableRevision)
	assert.Contains(t, st.Message, `revision 2 rolled back to revision 1: wave "main" not healthy within 4s`)
	assert.Contains(t, st.Message, "spoke-5:")
	assert.Contains(t, st.RollbackReason, "spoke-5:")
	requireEvents(t, fleet, "eddy", "WaveFailed", "RollingBack", "WaveRolledBack")
	requireEventWith(t, fleet, "eddy", "RolledBack", "revision 2 rolled back to revision 1")

	// It stays rolled back.
	require.Never(t, func() bool {
		return rolloutOf(h, "eddy").Phase != fgv1alpha1.RolloutRolledBack || !assert.ObjectsAreEqual(stable, servedRevisions(h, "eddy"))
	}, holdWindow, tick, "a rolled-back revision came back")
}
