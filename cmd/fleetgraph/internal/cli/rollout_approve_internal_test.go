package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// Every approval rollout approve would set, or its refusal, from what the
// hub published: a rollout of revision 3 whose first wave ran, whose
// second awaits approval and whose third requires it too.
func TestApprovalsThatApproveNothingAreRefused(t *testing.T) {
	ro := &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: fgv1alpha1.GraphRolloutSpec{Graph: "web", Waves: []fgv1alpha1.Wave{
			{Name: "canary", Approval: fgv1alpha1.ApprovalRequired}, {Name: "eu", Approval: fgv1alpha1.ApprovalRequired},
			{Name: "us", Approval: fgv1alpha1.ApprovalRequired}, {Clusters: 1},
		}},
		Status: fgv1alpha1.GraphRolloutStatus{
			Phase: fgv1alpha1.RolloutProgressing, TargetRevision: 3, Wave: 1, WaveName: "eu", AwaitingApproval: "eu",
			Approvals: []fgv1alpha1.RolloutApproval{{Revision: 3, Wave: "canary"}, {Revision: 4}},
		},
	}
	for _, c := range []struct {
		wave     string
		revision int64
		want     approval
		refusal  string
	}{
		{want: approval{value: "eu", what: `wave "eu" of revision 3`}},
		{wave: "eu", want: approval{value: "eu", what: `wave "eu" of revision 3`}},
		{wave: "us", want: approval{value: "us", what: `wave "us" of revision 3`}},
		{wave: "canary", want: approval{value: "canary", what: `wave "canary" of revision 3`, done: true}},
		{revision: 3, want: approval{value: "3", what: "revision 3", revisionOnly: true}},
		{revision: 4, want: approval{value: "4", what: "revision 4", revisionOnly: true, done: true}},
		{wave: "asia", refusal: `GraphRollout web has no wave "asia" (its waves: canary, eu, us, wave-4)`},
		{wave: "wave-4", refusal: `wave "wave-4" of GraphRollout web requires no approval (spec.waves[3].approval is not Required)`},
		{revision: 2, refusal: "revision 2 is older than revision 3, which GraphRollout web rolls out"},
		{revision: -1, refusal: "--revision -1: not a revision number"},
	} {
		got, err := decideApproval(ro, c.wave, c.revision)
		if c.refusal != "" {
			assert.EqualError(t, err, c.refusal, "%+v", c)
			assert.Equal(t, ExitFailed, exitCode(err))
			continue
		}
		require.NoError(t, err, "%+v", c)
		assert.Equal(t, c.want, got, "%+v", c)
	}

	// The eu wave approved and running: nothing awaits, and eu is reached.
	ro.Status.AwaitingApproval, ro.Status.Approvals = "", []fgv1alpha1.RolloutApproval{{Revision: 3, Wave: "eu"}}
	_, err := decideApproval(ro, "", 0)
	assert.EqualError(t, err, `nothing awaits approval in GraphRollout web (phase Progressing, revision 3, wave "eu")`)
	ro.Status.Approvals = nil
	_, err = decideApproval(ro, "canary", 0)
	assert.EqualError(t, err, `wave "canary" of GraphRollout web cannot be approved: revision 3 has already reached it (phase Progressing, revision 3, wave "eu")`)

	// Complete: every wave is reached.
	ro.Status = fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutComplete, TargetRevision: 3, Wave: 4, WaveName: "done"}
	_, err = decideApproval(ro, "", 0)
	assert.EqualError(t, err, "nothing awaits approval in GraphRollout web (phase Complete, revision 3)")
	_, err = decideApproval(ro, "us", 0)
	assert.ErrorContains(t, err, "revision 3 has already reached it")

	// No wave requires approval: a revision approval approves nothing.
	ro.Spec.Waves = []fgv1alpha1.Wave{{Name: "all", Percent: 100}}
	_, err = decideApproval(ro, "", 4)
	assert.EqualError(t, err, "no wave of GraphRollout web requires approval (spec.waves[].approval)")

	// No status yet.
	_, err = decideApproval(&fgv1alpha1.GraphRollout{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, "", 0)
	assert.EqualError(t, err, "the hub has published no status of GraphRollout new yet: no wave awaits approval")
}

func exitCode(err error) int {
	if ee, ok := err.(*exitError); ok {
		return ee.code
	}
	return ExitError
}
