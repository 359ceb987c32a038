//go:build integration

package sdk_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// withHealth is the extra spec of a rollout with the given health policy
// (soaking a second, like twoWaves).
func withHealth(health map[string]any) map[string]any {
	h := map[string]any{"soakSeconds": int64(1)}
	for k, v := range health {
		h[k] = v
	}
	return map[string]any{"health": h}
}

// A CEL health condition over each instance, reading its status and its
// spec, holds a wave while it is false for one of the wave's instances,
// even though every instance is ACTIVE; the next wave starts once it
// holds, and waits in turn for its own instances.
func TestAFalseHealthConditionHoldsTheWave(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}})
	gvk := startRing(t, fleet, h, spokes, "marsh", "Marsh", withHealth(map[string]any{
		"instanceCondition": `instance.status.state == "ACTIVE" && instance.spec.color == "blue"`,
	}))
	canary := spokes["spoke-1"]

	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "marsh", "Marsh", "2", "")))
	requireVersion(t, canary, "app", "2")
	requireState(t, canary, gvk, "app", "ACTIVE")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st, _ := h.Rollout("marsh")
		assert.Equal(ct, "canary", st.WaveName)
		require.Len(ct, st.HoldingBack, 1)
		assert.Equal(ct, "spoke-1", st.HoldingBack[0].Name)
		assert.Contains(ct, st.HoldingBack[0].Message, "0 of 1 instances Ready and passing the health condition")
		assert.Contains(ct, st.HoldingBack[0].Message, "instance default/app: the condition is false")
		valid := meta.FindStatusCondition(st.Conditions, fgv1alpha1.ConditionHealthConditionValid)
		require.NotNil(ct, valid)
		assert.Equal(ct, metav1.ConditionTrue, valid.Status)
	}, wait, tick)
	requireVersion(t, spokes["spoke-2"], "app", "1")
	assert.Equal(t, map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1}, servedRevisions(h, "marsh"))

	setColor(t, canary, gvk, "app", "blue")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st, _ := h.Rollout("marsh")
		assert.Equal(ct, "main", st.WaveName)
		assert.Len(ct, st.HoldingBack, 3, "the main wave's instances are green")
		assert.Equal(ct, allServe(2), servedRevisions(h, "marsh"))
	}, wait, tick)
	for _, name := range []string{"spoke-2", "spoke-3", "spoke-4"} {
		setColor(t, spokes[name], gvk, "app", "blue")
	}
	requireRollout(t, h, "marsh", fgv1alpha1.RolloutComplete, allServe(2))
}

// A health condition that does not type-check against the graph's
// instance kind refuses the rollout: the condition HealthConditionValid
// turns False naming the expression, an event says so, and a new revision
// reaches no cluster. From Go the same condition is not even written
// (ErrInvalidHealthCondition, naming the expression); a valid one lets the
// rollout go on.
func TestAHealthConditionThatDoesNotTypeCheckIsRefused(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}})
	bad := `instance.spec.colour == "green"`
	startRing(t, fleet, h, spokes, "fen", "Fen", withHealth(map[string]any{"instanceCondition": bad}))
	requireRefused := func(rev string) {
		t.Helper()
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			st, _ := h.Rollout("fen")
			valid := meta.FindStatusCondition(st.Conditions, fgv1alpha1.ConditionHealthConditionValid)
			require.NotNil(ct, valid)
			assert.Equal(ct, metav1.ConditionFalse, valid.Status)
			assert.Equal(ct, "InvalidHealthCondition", valid.Reason)
			assert.Contains(ct, valid.Message, "revision "+rev+": spec.health.instanceCondition: "+bad)
			assert.Contains(ct, valid.Message, "colour")
			assert.Contains(ct, st.Message, "refused")
		}, wait, tick)
	}
	requireRefused("1")
	requireEventWith(t, fleet, "fen", "HealthConditionRefused", "spec.health.instanceCondition: "+bad)

	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "fen", "Fen", "2", "")))
	requireRefused("2")
	assert.Equal(t, allServe(1), servedRevisions(h, "fen"), "no cluster takes the new revision")
	requireVersion(t, spokes["spoke-1"], "app", "1")

	err := h.SetHealthCondition(context.Background(), "fen", `instance.spec.color == 1`)
	require.ErrorIs(t, err, sdk.ErrInvalidHealthCondition)
	var gerr *graph.Error
	require.True(t, errors.As(err, &gerr), "%v", err)
	assert.Equal(t, `instance.spec.color == 1`, gerr.Expression)
	assert.ErrorIs(t, h.SetHealthCondition(context.Background(), "no-such-rollout", `true`), sdk.ErrNoRollout)

	require.NoError(t, h.SetHealthCondition(context.Background(), "fen", `instance.spec.color == "green"`))
	requireRollout(t, h, "fen", fgv1alpha1.RolloutComplete, allServe(2))
	st, _ := h.Rollout("fen")
	assert.True(t, meta.IsStatusConditionTrue(st.Conditions, fgv1alpha1.ConditionHealthConditionValid))
}

// maxErrorPercent judges the revision being rolled out, not the status an
// instance shows: on the canary, revision 2's child is refused and the
// instance's ERROR cannot be written (it still shows revision 1's
// ACTIVE). With readyPercent 0 the wave would pass; with maxErrorPercent 0
// it fails at its deadline and the main wave keeps revision 1.
func TestMaxErrorPercentCountsTheNewRevisionsErrors(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}})
	extra := withHealth(map[string]any{"readyPercent": int64(0), "maxErrorPercent": int64(0)})
	extra["progressDeadlineSeconds"] = int64(5)
	gvk := startRing(t, fleet, h, spokes, "bog", "Bog", extra)
	canary := spokes["spoke-1"]
	refuseVersion(t, canary, "2")
	keepActive(t, canary, "bogs")
	require.Eventually(t, func() bool { // the policy is enforced
		obj := instance(gvk, "app", nil)
		if err := canary.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false
		}
		_ = unstructured.SetNestedField(obj.Object, "ERROR", "status", "state")
		return canary.Status().Update(context.Background(), obj, client.DryRunAll) != nil
	}, wait, tick)

	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "bog", "Bog", "2", "")))
	requireRollout(t, h, "bog", fgv1alpha1.RolloutFailed,
		map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1})
	st, _ := h.Rollout("bog")
	assert.Contains(t, st.Message, `wave "canary" not healthy`)
	assert.Contains(t, st.Message, "1 of 1 instances in ERROR, at most 0% allowed")
	requireState(t, canary, gvk, "app", "ACTIVE") // what revision 1 wrote, still shown
	for _, name := range []string{"spoke-2", "spoke-3", "spoke-4"} {
		requireVersion(t, spokes[name], "app", "1")
	}
}
