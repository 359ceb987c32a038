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
