//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// refuseVersion makes the cluster refuse every ConfigMap whose data says
// version, with a ValidatingAdmissionPolicy, and waits until it does.
func refuseVersion(t *testing.T, c client.Client, version string) {
	t.Helper()
	refuseData(t, c, "version", version)
}

// refuseData makes the cluster refuse every ConfigMap whose data[key] is
// value (a Validating admission policy of its own per cluster and key).
func refuseData(t *testing.T, c client.Client, key, value string) {
	t.Helper()
	ctx := context.Background()
	name := "refuse-" + key
	require.NoError(t, c.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf(`!has(object.data) || !(%q in object.data) || object.data[%q] != %q`, key, key, value),
				Message:    fmt.Sprintf("%s %s is refused on this cluster", key, value),
			}},
		},
	}))
	require.NoError(t, c.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}))
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"}, Data: map[string]string{key: value}}
	require.Eventually(t, func() bool { return c.Create(ctx, probe.DeepCopy(), client.DryRunAll) != nil }, wait, tick, "the policy refuses %s %s", key, value)
}

// maxFailuresWaves is twoWaves with a 4-second deadline and the main wave
// allowing maxFailures failures.
func maxFailuresWaves(maxFailures any) map[string]any {
	main := map[string]any{"name": "main", "percent": int64(100)}
	if maxFailures != nil {
		main["maxFailures"] = maxFailures
	}
	return map[string]any{
		"progressDeadlineSeconds": int64(4),
		"waves": []any{
			map[string]any{"name": "canary", "clusterSelector": map[string]any{"matchLabels": map[string]any{"ring": "canary"}}},
			main,
		},
	}
}

// A revision one spoke of five refuses (its children are denied there)
// stops the rollout at that wave with no failure budget; with maxFailures
// 1 the retried wave completes on the other spokes, lists the refusing
// one as failed with why, and puts it back on the stable revision with
// its instance ACTIVE.
func TestMaxFailuresCompletesWithoutARefusingSpoke(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 5) // its own: the rollout controller reads every GraphRollout on its hub cluster
	main := map[string]string{"ring": "main"}
	provider := newLabelledProvider(t, fleet, map[string]map[string]string{
		"spoke-1": {"ring": "canary"}, "spoke-2": main, "spoke-3": main, "spoke-4": main, "spoke-5": main,
	})
	spokes := clientsOf(t, fleet)
	refuseVersion(t, spokes["spoke-5"], "2")
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}})
	gvk := webAppGVK.GroupVersion().WithKind("Weir")
	applyRollout(t, fleet.Hub.Config, "weir", twoWaves("weir", maxFailuresWaves(nil)))
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "weir", "Weir", "1", "")))
	for _, c := range spokes {
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"color": "green"}))
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	requireRollout(t, h, "weir", fgv1alpha1.RolloutComplete,
		map[string]int64{"spoke-1": 1, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1, "spoke-5": 1})
	hubClient := newClient(t, fleet.Hub.Config)

	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "weir", "Weir", "2", "")))
	requireRollout(t, h, "weir", fgv1alpha1.RolloutFailed,
		map[string]int64{"spoke-1": 2, "spoke-2": 2, "spoke-3": 2, "spoke-4": 2, "spoke-5": 2})
	st := rolloutStatus(t, hubClient, "weir")
	assert.Equal(t, "main", st.WaveName, "no budget: the rollout stops at the wave")
	assert.Contains(t, st.Message, `wave "main" not healthy`)
	assert.Contains(t, st.Message, "spoke-5:")
	assert.Empty(t, st.Failed)

	applyRollout(t, fleet.Hub.Config, "weir", twoWaves("weir", maxFailuresWaves(int64(1))))
	require.NoError(t, h.ResumeRollout(context.Background(), "weir"))
	done := map[string]int64{"spoke-1": 2, "spoke-2": 2, "spoke-3": 2, "spoke-4": 2, "spoke-5": 1}
	requireRollout(t, h, "weir", fgv1alpha1.RolloutComplete, done)
	for _, name := range []string{"spoke-1", "spoke-2", "spoke-3", "spoke-4"} {
		requireVersion(t, spokes[name], "app", "2")
		requireState(t, spokes[name], gvk, "app", "ACTIVE")
	}
	requireVersion(t, spokes["spoke-5"], "app", "1")
	requireState(t, spokes["spoke-5"], gvk, "app", "ACTIVE")
	st = rolloutStatus(t, hubClient, "weir")
	require.Len(t, st.Failed, 1)
	assert.Equal(t, "spoke-5", st.Failed[0].Name)
	assert.Equal(t, int32(1), st.Failed[0].Wave)
	assert.Equal(t, int64(1), st.Failed[0].Revision, "back on the stable revision")
	assert.NotEmpty(t, st.Failed[0].Message)
	assert.Empty(t, st.HoldingBack)
	requireEventWith(t, fleet, "weir", "ClusterFailed", `cluster "spoke-5" failed wave "main" (1 of 1 failures allowed) and goes back to revision 1`)
}
