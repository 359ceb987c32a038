package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// maxErrorPercent bounds the ERRORs the new revision found; the health
// condition lowers the Ready count to the instances that pass it.
func TestHealthGatesBeyondReady(t *testing.T) {
	h := fgv1alpha1.HealthPolicy{MaxErrorPercent: ptr.To[int32](10)}
	ten := Observation{Instances: 10, Listed: 10, Ready: 9, Errors: 1}
	assert.Empty(t, healthWhy(h, 0, ten), "1 of 10 is 10%")
	ten.Errors = 2
	assert.Equal(t, "2 of 10 instances in ERROR, at most 10% allowed", healthWhy(h, 0, ten))
	assert.Empty(t, healthWhy(fgv1alpha1.HealthPolicy{}, 0, ten), "no bound without maxErrorPercent")

	judged := Observation{Instances: 2, Listed: 2, Ready: 2, Judged: true, Passing: 1, Why: "instance default/b: the condition is false"}
	assert.Equal(t, "1 of 2 instances Ready and passing the health condition, 100% needed: instance default/b: the condition is false",
		healthWhy(fgv1alpha1.HealthPolicy{}, 100, judged))
	assert.Empty(t, healthWhy(fgv1alpha1.HealthPolicy{}, 50, judged))
	assert.Equal(t, "1 of 2 instances Ready, 100% needed", healthWhy(fgv1alpha1.HealthPolicy{}, 100, Observation{Instances: 2, Ready: 1}))
}

// A rollout whose health condition does not type-check lets no revision
// past its target go anywhere; a rollback still goes.
func TestARefusedRolloutHoldsLaterRevisions(t *testing.T) {
	p := &plan{spec: fgv1alpha1.GraphRolloutSpec{Graph: "g"}, target: 2, wave: 1, refusedAbove: 2}
	assert.ErrorIs(t, p.decideOn("a", 3, 0), ErrHeldBack)
	assert.NoError(t, p.decideOn("a", 2, 0))
	p.spec.RollbackTo = 3
	assert.NoError(t, p.decideOn("a", 3, 0))
}

// With readyPercent 0 and maxErrorPercent 0, a cluster the new revision
// serves but whose instances it has not reconciled yet has reported no
// error: it is not healthy until the revision has reconciled every
// instance, and then its errors decide.
func TestACanaryIsNotHealthyBeforeTheRevisionReconciledItsInstances(t *testing.T) {
	spec := fgv1alpha1.GraphRolloutSpec{Graph: "g", Health: fgv1alpha1.HealthPolicy{
		ReadyPercent: ptr.To[int32](0), MaxErrorPercent: ptr.To[int32](0)}}
	waves := map[string]int32{"canary": 0}
	served := Observation{Revision: 2, Established: true, Serving: true, Instances: 1, Listed: 1, Ready: 0}
	pending := served
	pending.Unreconciled = 1
	bad := unhealthy(spec, 2, 0, waves, map[string]Observation{"canary": pending})
	if assert.Len(t, bad, 1) {
		assert.Equal(t, "0 of 1 instances reconciled by revision 2", bad[0].Message)
	}
	failed := served
	failed.Errors = 1
	bad = unhealthy(spec, 2, 0, waves, map[string]Observation{"canary": failed})
	if assert.Len(t, bad, 1) {
		assert.Equal(t, "1 of 1 instances in ERROR, at most 0% allowed", bad[0].Message)
	}
	assert.Empty(t, unhealthy(spec, 2, 0, waves, map[string]Observation{"canary": served}), "reconciled, no error")
}
