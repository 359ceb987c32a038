package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

func twoWaveRollout(second fgv1alpha1.Wave) *fgv1alpha1.GraphRollout {
	return &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{
		Graph:                   "g",
		Waves:                   []fgv1alpha1.Wave{{Name: "one", Clusters: 1}, second},
		ProgressDeadlineSeconds: 60,
	}}
}

func servingAll(a, b int64) map[string]Observation {
	return map[string]Observation{
		"a": {Revision: a, Established: true},
		"b": {Revision: b, Established: true},
	}
}

// A wave with approval Required holds before it starts: the status names
// it, no clock runs, its clusters may not take the revision; the
// annotation naming it records an approval (with who set it) and the wave
// opens. A later revision needs approving again.
func TestARequiredWaveWaitsForItsApproval(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	ro := twoWaveRollout(fgv1alpha1.Wave{Name: "prod", Clusters: 1, Approval: fgv1alpha1.ApprovalRequired})
	waves := map[string]int32{"a": 0, "b": 1}
	step(t0, ro, 1, waves, servingAll(1, 1))
	step(at(time.Second), ro, 2, waves, servingAll(1, 1))
	evs := step(at(2*time.Second), ro, 2, waves, servingAll(2, 1))
	st := &ro.Status
	assert.Equal(t, "prod", st.AwaitingApproval)
	assert.Equal(t, int32(1), st.Wave)
	assert.Nil(t, st.WaveStarted, "no deadline runs while waiting")
	assert.Contains(t, st.Message, `wave "prod" awaits approval of revision 2`)
	require.NotEmpty(t, evs)
	assert.Equal(t, "AwaitingApproval", evs[len(evs)-1].reason)

	p := &plan{spec: ro.Spec, target: st.TargetRevision, wave: st.Wave, awaiting: st.AwaitingApproval != ""}
	assert.ErrorIs(t, p.decide(2, 1), ErrHeldBack, "the waiting wave's clusters keep the old revision")
	assert.NoError(t, p.decide(2, 0))

	evs = step(at(100*time.Second), ro, 2, waves, servingAll(2, 1))
	assert.Equal(t, fgv1alpha1.RolloutProgressing, st.Phase, "waiting never fails")
	assert.Empty(t, evs, "the wait is announced once")

	ro.Annotations = map[string]string{fgv1alpha1.AnnotationApprove: "prod", fgv1alpha1.AnnotationApprovedBy: "alice"}
	ro.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "security-oncall", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:fleetgraph.dev/approve":{}}}}`)}}}
	evs = step(at(101*time.Second), ro, 2, waves, servingAll(2, 1))
	ro.Annotations = nil // the Controller removes it once the status holds it
	assert.Empty(t, st.AwaitingApproval)
	require.Len(t, st.Approvals, 1)
	assert.Equal(t, fgv1alpha1.RolloutApproval{Revision: 2, Wave: "prod", By: "alice", At: at(101 * time.Second)}, st.Approvals[0])
	require.NotEmpty(t, evs)
	assert.Equal(t, "Approved", evs[0].reason)
	assert.Contains(t, evs[0].note, `wave "prod" of revision 2 approved by "alice"`)
	require.NotNil(t, st.WaveStarted, "the deadline counts from the approval")
	assert.Equal(t, at(101*time.Second), *st.WaveStarted)
	p = &plan{spec: ro.Spec, target: st.TargetRevision, wave: st.Wave, awaiting: st.AwaitingApproval != ""}
	assert.NoError(t, p.decide(2, 1))

	step(at(102*time.Second), ro, 2, waves, servingAll(2, 2))
	assert.Equal(t, fgv1alpha1.RolloutComplete, st.Phase)

	// A new revision starts without approvals.
	step(at(103*time.Second), ro, 3, waves, servingAll(2, 2))
	assert.Empty(t, st.Approvals, "approvals of revision 2 do not carry to 3")
	step(at(104*time.Second), ro, 3, waves, servingAll(3, 2))
	assert.Equal(t, "prod", st.AwaitingApproval)
}

// An approval by revision number opens every wave of that revision once
// it exists; given before the revision exists it is ignored with a warning
// (and the Controller removes it), so it never approves that revision
// later; a value naming neither a wave nor a revision is refused with a
// warning.
func TestApprovalByRevisionAndUnknownValues(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro := twoWaveRollout(fgv1alpha1.Wave{Name: "prod", Clusters: 1, Approval: fgv1alpha1.ApprovalRequired})
	ro.Spec.Waves[0].Approval = fgv1alpha1.ApprovalRequired
	waves := map[string]int32{"a": 0, "b": 1}
	step(t0, ro, 1, waves, servingAll(1, 1))

	ro.Annotations = map[string]string{fgv1alpha1.AnnotationApprove: "no-such-wave"}
	evs := step(t0, ro, 1, waves, servingAll(1, 1))
	require.Len(t, evs, 1)
	assert.Equal(t, "ApprovalIgnored", evs[0].reason)
	assert.Contains(t, evs[0].note, `"no-such-wave"`)
	assert.Empty(t, ro.Status.Approvals)

	ro.Annotations = map[string]string{fgv1alpha1.AnnotationApprove: "2"}
	evs = step(t0, ro, 1, waves, servingAll(1, 1))
	ro.Annotations = nil // the Controller removes it after the look
	require.Len(t, evs, 1)
	assert.Equal(t, "ApprovalIgnored", evs[0].reason)
	assert.Contains(t, evs[0].note, "revision 2 does not exist yet (the latest is 1)")
	assert.Empty(t, ro.Status.Approvals)
	step(t0, ro, 2, waves, servingAll(1, 1))
	assert.Equal(t, "one", ro.Status.AwaitingApproval, "revision 2 was not approved before it existed")

	ro.Annotations = map[string]string{fgv1alpha1.AnnotationApprove: "2"}
	step(t0, ro, 2, waves, servingAll(1, 1))
	ro.Annotations = nil
	assert.Empty(t, ro.Status.AwaitingApproval, "approved once it exists")
	step(t0, ro, 2, waves, servingAll(2, 1))
	step(t0, ro, 2, waves, servingAll(2, 2))
	assert.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase)

	ro.Annotations = map[string]string{fgv1alpha1.AnnotationApprove: "1"}
	evs = step(t0, ro, 2, waves, servingAll(2, 2))
	require.Len(t, evs, 1)
	assert.Contains(t, evs[0].note, "revision 1 can no longer be rolled out")
}

// Approvals that cannot apply any more are pruned, and the list is
// capped at MaxApprovals, newest kept.
func TestApprovalsArePrunedAndCapped(t *testing.T) {
	st := &fgv1alpha1.GraphRolloutStatus{TargetRevision: 5, StableRevision: 4}
	spec := fgv1alpha1.GraphRolloutSpec{}
	for _, rev := range []int64{3, 4, 5, 6, 7, 9} {
		st.Approvals = append(st.Approvals, fgv1alpha1.RolloutApproval{Revision: rev})
	}
	pruneApprovals(st, spec, 7)
	var kept []int64
	for _, a := range st.Approvals {
		kept = append(kept, a.Revision)
	}
	assert.Equal(t, []int64{5, 6, 7}, kept, "below the target, at or below stable, and not yet published go")

	spec.RollbackTo = 2
	st.Approvals = []fgv1alpha1.RolloutApproval{{Revision: 2}}
	pruneApprovals(st, spec, 7)
	assert.Len(t, st.Approvals, 1, "the revision spec.rollbackTo names may still be approved")

	st.Approvals = nil
	for i := range fgv1alpha1.MaxApprovals + 10 {
		st.Approvals = append(st.Approvals, fgv1alpha1.RolloutApproval{Revision: 5, Wave: fmt.Sprint("w", i)})
	}
	pruneApprovals(st, spec, 7)
	require.Len(t, st.Approvals, fgv1alpha1.MaxApprovals)
	assert.Equal(t, fmt.Sprint("w", fgv1alpha1.MaxApprovals+9), st.Approvals[len(st.Approvals)-1].Wave, "the newest are kept")
}

// A resume annotation set while the rollout progresses retries nothing
// later: the next failure stays failed until a new value is set.
func TestAnEarlyResumeDoesNotRetryALaterFailure(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	ro := twoWaveRollout(fgv1alpha1.Wave{Name: "two", Clusters: 1})
	waves := map[string]int32{"a": 0, "b": 1}
	step(t0, ro, 1, waves, servingAll(1, 1))
	step(at(time.Second), ro, 2, waves, servingAll(1, 1))
	require.Equal(t, fgv1alpha1.RolloutProgressing, ro.Status.Phase)

	ro.Annotations = map[string]string{fgv1alpha1.AnnotationResume: "early"}
	step(at(2*time.Second), ro, 2, waves, servingAll(1, 1))
	step(at(100*time.Second), ro, 2, waves, servingAll(1, 1))
	require.Equal(t, fgv1alpha1.RolloutFailed, ro.Status.Phase)
	evs := step(at(101*time.Second), ro, 2, waves, servingAll(1, 1))
	assert.Equal(t, fgv1alpha1.RolloutFailed, ro.Status.Phase, "the early annotation must not retry the failure")
	assert.Empty(t, evs)

	ro.Annotations[fgv1alpha1.AnnotationResume] = "after"
	evs = step(at(102*time.Second), ro, 2, waves, servingAll(1, 1))
	assert.Equal(t, fgv1alpha1.RolloutProgressing, ro.Status.Phase, "a value set after the failure retries")
	require.NotEmpty(t, evs)
	assert.Equal(t, "Resumed", evs[0].reason)
}
