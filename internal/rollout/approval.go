package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// waveIndex is the index of the wave of spec named name, or -1.
func waveIndex(spec fgv1alpha1.GraphRolloutSpec, name string) int32 {
	for i := range waveCount(spec) {
		if waveName(spec, i) == name {
			return i
		}
	}
	return -1
}

// requiresApproval reports whether wave w of spec must be approved.
func requiresApproval(spec fgv1alpha1.GraphRolloutSpec, w int32) bool {
	return int(w) < len(spec.Waves) && spec.Waves[w].Approval == fgv1alpha1.ApprovalRequired
}

// approved reports whether approvals let wave w of spec roll revision rev
// out.
func approved(approvals []fgv1alpha1.RolloutApproval, spec fgv1alpha1.GraphRolloutSpec, rev int64, w int32) bool {
	name := waveName(spec, w)
	for _, a := range approvals {
		if a.Revision == rev && (a.Wave == "" || a.Wave == name) {
			return true
		}
	}
	return false
}

// awaitsApproval reports whether wave w waits for an approval of the
// status's target revision.
func awaitsApproval(spec fgv1alpha1.GraphRolloutSpec, st *fgv1alpha1.GraphRolloutStatus, w int32) bool {
	return requiresApproval(spec, w) && !approved(st.Approvals, spec, st.TargetRevision, w)
}

// holdForApproval holds the wave in progress before it starts: no clock
// runs until it is approved.
func holdForApproval(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec) []event {
	name := waveName(spec, st.Wave)
	st.WaveStarted, st.HealthySince = nil, nil
	st.Message = fmt.Sprintf("wave %q awaits approval of revision %d: set the %s annotation to %q (or to %d for every wave)",
		name, st.TargetRevision, fgv1alpha1.AnnotationApprove, name, st.TargetRevision)
	if st.AwaitingApproval == name {
		return nil
	}
	st.AwaitingApproval = name
	return []event{{"Normal", "AwaitingApproval", st.Message}}
}

// approvalsFor keeps the approvals that hold for revision rev.
func approvalsFor(approvals []fgv1alpha1.RolloutApproval, rev int64) []fgv1alpha1.RolloutApproval {
	var out []fgv1alpha1.RolloutApproval
	for _, a := range approvals {
		if a.Revision >= rev {
			out = append(out, a)
		}
	}
	return out
}

// canApply reports whether an approval of revision rev may still open a
// wave: rev exists (at most latest, the graph's latest revision) and is
// the target, the revision spec.rollbackTo names, or newer than both the
// target and the stable revision. Any other approval is of a revision
// rolled out, replaced or not published yet.
func canApply(rev int64, st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, latest int64) bool {
	switch {
	case rev <= 0 || rev > latest:
		return false
	case rev == st.TargetRevision || rev == spec.RollbackTo:
		return true
	}
	return rev > st.TargetRevision && rev > st.StableRevision
}

// pruneApprovals drops the approvals that cannot apply any more (canApply)
// and keeps at most fgv1alpha1.MaxApprovals, the newest.
func pruneApprovals(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, latest int64) {
	var out []fgv1alpha1.RolloutApproval
	for _, a := range st.Approvals {
		if canApply(a.Revision, st, spec, latest) {
			out = append(out, a)
		}
	}
	if len(out) > fgv1alpha1.MaxApprovals {
		out = out[len(out)-fgv1alpha1.MaxApprovals:]
	}
	st.Approvals = out
}

// takeApproval records the approval the AnnotationApprove annotation
// gives, if it gives a new one for a revision that exists and may still
// be rolled out (canApply; latest is the graph's latest revision): an
// approval of a revision not published yet is ignored with a warning, so
// that nothing approves a revision before anyone could look at it. The
// Controller removes the annotation after each look (but while latest is
// unknown, 0, when nothing is judged), so an ignored one never applies
// later.
func takeApproval(now metav1.Time, ro *fgv1alpha1.GraphRollout, latest int64) []event {
	value := ro.Annotations[fgv1alpha1.AnnotationApprove]
	if value == "" || latest == 0 {
		return nil
	}
	st := &ro.Status
	a, err := parseApproval(ro.Spec, st.TargetRevision, value)
	if err == nil && !canApply(a.Revision, st, ro.Spec, latest) {
		err = notApplicable(value, a.Revision, st, latest)
	}
	if err != nil {
		return []event{{"Warning", "ApprovalIgnored", err.Error()}}
	}
	for _, have := range st.Approvals {
		if have.Revision == a.Revision && have.Wave == a.Wave {
			return nil
		}
	}
	a.By, a.At = approver(ro), now
	st.Approvals = append(st.Approvals, a)
	what := fmt.Sprintf("wave %q of revision %d", a.Wave, a.Revision)
	if a.Wave == "" {
		what = fmt.Sprintf("every wave of revision %d", a.Revision)
	}
	by := strconv.Quote(a.By)
	if a.By == "" {
		by = "an unverified user (the hub's approver admission policy is off or not active, so the API server did not say who set the " +
			fgv1alpha1.AnnotationApprove + " annotation)"
	}
	return []event{{"Normal", "Approved", fmt.Sprintf("%s approved by %s", what, by)}}
}

// parseApproval reads an AnnotationApprove value: a revision number, or
// the name of one of spec's waves (for revision target).
func parseApproval(spec fgv1alpha1.GraphRolloutSpec, target int64, value string) (fgv1alpha1.RolloutApproval, error) {
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		if n <= 0 {
			return fgv1alpha1.RolloutApproval{}, fmt.Errorf("%s=%q: %w", fgv1alpha1.AnnotationApprove, truncate(value), ErrUnknownWave)
		}
		return fgv1alpha1.RolloutApproval{Revision: n}, nil
	}
	if waveIndex(spec, value) < 0 {
		return fgv1alpha1.RolloutApproval{}, fmt.Errorf("%s=%q: %w", fgv1alpha1.AnnotationApprove, truncate(value), ErrUnknownWave)
	}
	return fgv1alpha1.RolloutApproval{Revision: target, Wave: value}, nil
}

// notApplicable says why an approval of revision rev is ignored.
func notApplicable(value string, rev int64, st *fgv1alpha1.GraphRolloutStatus, latest int64) error {
	if rev > latest {
		return fmt.Errorf("%s=%q: revision %d does not exist yet (the latest is %d): %w; approve it once it is published",
			fgv1alpha1.AnnotationApprove, truncate(value), rev, latest, ErrNoSuchRevision)
	}
	return fmt.Errorf("%s=%q: revision %d can no longer be rolled out (target %d, stable %d): %w",
		fgv1alpha1.AnnotationApprove, truncate(value), rev, st.TargetRevision, st.StableRevision, ErrNoSuchRevision)
}

// approver is who set the AnnotationApprove annotation as the API server
// told the approver admission policy (AnnotationApprovedBy); "" when
// unverified. The Controller drops that annotation from what it reads
// unless it verified the policy active (approverVerified); managed
// fields, whose manager name the writer picks, are never read.
func approver(ro *fgv1alpha1.GraphRollout) string {
	return truncate(ro.Annotations[fgv1alpha1.AnnotationApprovedBy])
}

// truncate bounds a tenant-written string quoted in status and events.
func truncate(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}

// ErrUnknownWave: an approval names neither a wave of the rollout nor a
// revision.
var ErrUnknownWave = errors.New("names no wave of the rollout and no revision")

// ErrNoSuchRevision: an approval names a revision that does not exist
// yet, or that can no longer be rolled out.
var ErrNoSuchRevision = errors.New("approves no revision that may be rolled out")

// ApproveFieldManager is the field manager Controller.Approve sets the
// AnnotationApprove annotation as (events name the user the API server
// authenticated, not this).
const ApproveFieldManager = "fleetgraph-approve"

// Approve approves wave (a wave's name, or a revision number in decimal)
// of the GraphRollout named name, or of the one that rules the graph named
// name: it sets the AnnotationApprove annotation, which the next look
// records in the status. It returns ErrNoRollout when there is no such
// GraphRollout, ErrUnknownWave when it has no such wave, and
// ErrNoSuchRevision for a revision not published yet (or one that can no
// longer be rolled out).
func (c *Controller) Approve(ctx context.Context, name, wave string) error {
	ro, err := c.find(ctx, name)
	if err != nil {
		return err
	}
	a, err := parseApproval(ro.Spec, ro.Status.TargetRevision, wave)
	if latest := c.Hooks.Latest(ro.Spec.Graph); err == nil && a.Wave == "" && latest > 0 && !canApply(a.Revision, &ro.Status, ro.Spec, latest) {
		err = notApplicable(wave, a.Revision, &ro.Status, latest)
	}
	if err != nil {
		return fmt.Errorf("approving GraphRollout %s: %w", ro.Name, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{fgv1alpha1.AnnotationApprove: wave}}})
	if err != nil {
		return fmt.Errorf("approving GraphRollout %s: %w", ro.Name, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName(ro.Name)
	if err := c.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(ApproveFieldManager)); err != nil {
		return fmt.Errorf("approving GraphRollout %s: %w", ro.Name, err)
	}
	return nil
}

// find reads, live, the GraphRollout named name or else the one that rules
// the graph named name (as of the last look).
func (c *Controller) find(ctx context.Context, name string) (*fgv1alpha1.GraphRollout, error) {
	candidates := []string{name}
	c.mu.Lock()
	if ruling := c.names[name]; ruling != "" && ruling != name {
		candidates = append(candidates, ruling)
	}
	c.mu.Unlock()
	for _, n := range candidates {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
		err := c.Client.Get(ctx, client.ObjectKey{Name: n}, u)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading GraphRollout %s: %w", n, err)
		}
		ro := &fgv1alpha1.GraphRollout{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ro); err != nil {
			return nil, fmt.Errorf("decoding GraphRollout %s: %w", n, err)
		}
		return ro, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNoRollout, name)
}

// fieldManager is the manager the Controller writes as.
func (c *Controller) fieldManager() string {
	if c.FieldManager != "" {
		return c.FieldManager
	}
	return "fleetgraph"
}
