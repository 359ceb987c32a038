package hub

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// Ready and state follow kro: Active and Ready only when GraphAccepted,
// KindReady and ControllerReady are all True; otherwise Ready carries the
// failing condition's reason and message.
func TestReadyFollowsItsDependents(t *testing.T) {
	all := func(kind metav1.ConditionStatus) *v1alpha1.ResourceGraphDefinitionStatus {
		st := &v1alpha1.ResourceGraphDefinitionStatus{}
		setCondition(st, v1alpha1.ConditionGraphAccepted, metav1.ConditionTrue, "Valid", "ok", 1)
		setCondition(st, v1alpha1.ConditionKindReady, kind, "Failed", "kind X cannot be served on 1 of 2 clusters", 1)
		setCondition(st, v1alpha1.ConditionControllerReady, metav1.ConditionTrue, "Running", "controller is running", 1)
		return st
	}

	st := all(metav1.ConditionTrue)
	setReady(st, 1)
	assert.Equal(t, v1alpha1.StateActive, st.State)
	assert.True(t, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady))

	st = all(metav1.ConditionFalse)
	setReady(st, 1)
	assert.Equal(t, v1alpha1.StateInactive, st.State)
	ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, "Failed", ready.Reason)
	assert.Contains(t, ready.Message, "1 of 2 clusters")

	st = &v1alpha1.ResourceGraphDefinitionStatus{}
	setReady(st, 1)
	assert.Equal(t, v1alpha1.StateInactive, st.State, "nothing known yet is not Active")
	assert.Equal(t, metav1.ConditionUnknown, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady).Status)
}
