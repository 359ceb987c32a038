//go:build integration

package sdk_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// A wave's health is judged on the revision it rolls out, not on status an
// earlier revision left: on the canary, revision 2's child is refused and
// the instance's ERROR cannot be written either (a policy keeps it
// ACTIVE, as revision 1 wrote it). The instance still reads ACTIVE, yet
// revision 2 never reconciled it to ACTIVE, so the canary wave fails at
// its deadline and the main wave keeps revision 1. Before, the rollout
// completed on the stale ACTIVE.
func TestAWaveIsNotHealthyOnTheOldRevisionsStatus(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}})
	gvk := startRing(t, fleet, h, spokes, "eddy", "Eddy", map[string]any{"progressDeadlineSeconds": int64(5)})
	canary := spokes["spoke-1"]
	refuseVersion(t, canary, "2")
	keepActive(t, canary, "eddies")
	require.Eventually(t, func() bool { // the policy is enforced
		obj := instance(gvk, "app", nil)
		if err := canary.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false
		}
		_ = unstructured.SetNestedField(obj.Object, "ERROR", "status", "state")
		return canary.Status().Update(context.Background(), obj, client.DryRunAll) != nil
	}, wait, tick)

	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "eddy", "Eddy", "2", "")))

	requireRollout(t, h, "eddy", fgv1alpha1.RolloutFailed,
		map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1})
	st, _ := h.Rollout("eddy")
	assert.Contains(t, st.Message, `wave "canary" not healthy`)
	requireState(t, canary, gvk, "app", "ACTIVE") // what revision 1 wrote, still shown
	requireVersion(t, canary, "app", "1")         // revision 2's child never applied
	for _, name := range []string{"spoke-2", "spoke-3", "spoke-4"} {
		requireVersion(t, spokes[name], "app", "1")
	}
}

// keepActive makes the spoke refuse any instance update of the resource
// that sets a state other than ACTIVE.
func keepActive(t *testing.T, c client.Client, resource string) {
	t.Helper()
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "keep-active"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"kro.run"}, APIVersions: []string{"v1alpha1"}, Resources: []string{resource, resource + "/status"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: `!has(object.status) || !has(object.status.state) || object.status.state == 'ACTIVE'`}},
		},
	}
	require.NoError(t, c.Create(ctx, policy))
	require.NoError(t, c.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "keep-active"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "keep-active", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}))
}
