//go:build integration

package sdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// holdWindow is how long a test watches a held wave stay held.
const holdWindow = 3 * time.Second

// gatedWaves is twoWaves with the main wave waiting for approval.
func gatedWaves() map[string]any {
	return map[string]any{"waves": []any{
		map[string]any{"name": "canary", "clusterSelector": map[string]any{"matchLabels": map[string]any{"ring": "canary"}}},
		map[string]any{"name": "main", "percent": int64(100), "approval": fgv1alpha1.ApprovalRequired},
	}}
}

// requireAwaiting waits until the hub's status, on the API server, says
// the main wave awaits approval of revision rev, with the canary on rev
// and the rest on rev-1; then watches for holdWindow that nothing of the
// main wave moves.
func requireAwaiting(t *testing.T, h *sdk.Hub, hubClient client.Client, graphName string, rev int64) {
	t.Helper()
	requireAwaitingFrom(t, h, hubClient, graphName, rev, rev-1)
}

// requireAwaitingFrom is requireAwaiting with the rest on revision rest.
func requireAwaitingFrom(t *testing.T, h *sdk.Hub, hubClient client.Client, graphName string, rev, rest int64) {
	t.Helper()
	mid := map[string]int64{"spoke-1": rev, "spoke-2": rest, "spoke-3": rest, "spoke-4": rest}
	requireRollout(t, h, graphName, fgv1alpha1.RolloutProgressing, mid)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := rolloutStatus(ct, hubClient, graphName)
		assert.Equal(ct, "main", st.AwaitingApproval)
		assert.Equal(ct, int32(1), st.Wave)
		assert.Equal(ct, rev, st.TargetRevision)
		assert.Contains(ct, st.Message, `wave "main" awaits approval`)
	}, wait, tick)
	require.Never(t, func() bool {
		st := rolloutStatus(t, hubClient, graphName)
		return st.AwaitingApproval != "main" || !assert.ObjectsAreEqual(mid, servedRevisions(h, graphName))
	}, holdWindow, tick, "the main wave moved without approval")
}

// A wave with approval Required waits, across a hub restart, until the
// fleetgraph.dev/approve annotation names it; the approval is recorded
// with who set it as the API server authenticated them (not the field
// manager they chose), the annotation is consumed, and the next revision
// waits again until Hub.Approve approves it. Nobody writes approved-by
// directly.
func TestARequiredWaveWaitsForApproval(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t)
	opts := sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}}
	h, stop := startStoppableHub(t, fleet.Hub.Config, provider, opts)
	gvk := startRing(t, fleet, h, spokes, "sluice", "Sluice", gatedWaves())
	hubClient := newClient(t, fleet.Hub.Config)

	rev2 := tideRGD(t, "sluice", "Sluice", "2", "")
	require.NoError(t, h.RegisterGraph(context.Background(), rev2))
	requireAwaiting(t, h, hubClient, "sluice", 2)
	requireVersion(t, spokes["spoke-1"], "app", "2")
	for _, name := range []string{"spoke-2", "spoke-3", "spoke-4"} {
		requireVersion(t, spokes[name], "app", "1")
	}
	requireEvents(t, fleet, "sluice", "AwaitingApproval")

	// A restarted hub still waits.
	stop()
	provider2 := newLabelledProvider(t, fleet, provider.labels)
	h2, _ := startStoppableHub(t, fleet.Hub.Config, provider2, opts)
	require.NoError(t, h2.RegisterGraph(context.Background(), rev2))
	requireAwaiting(t, h2, hubClient, "sluice", 2)

	// As alice: kubectl annotate --field-manager security-oncall
	// graphrollout sluice fleetgraph.dev/approve=main
	alice := impersonating(t, fleet.Hub.Config, "alice")
	approveAs(t, alice, "sluice", "main", "security-oncall")
	requireRollout(t, h2, "sluice", fgv1alpha1.RolloutComplete, allServe(2))
	for _, c := range spokes {
		requireVersion(t, c, "app", "2")
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	st := rolloutStatus(t, hubClient, "sluice")
	assert.Empty(t, st.AwaitingApproval)
	require.Len(t, st.Approvals, 1)
	assert.Equal(t, int64(2), st.Approvals[0].Revision)
	assert.Equal(t, "main", st.Approvals[0].Wave)
	assert.Equal(t, "alice", st.Approvals[0].By)
	requireEventWith(t, fleet, "sluice", "Approved", `wave "main" of revision 2 approved by "alice"`)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NotContains(ct, rolloutAnnotations(ct, hubClient, "sluice"), fgv1alpha1.AnnotationApprove, "consumed")
	}, wait, tick)
	// A direct write of approved-by, by alice or anyone, is put back.
	setAnnotation(t, alice, "sluice", fgv1alpha1.AnnotationApprovedBy, "security-oncall")
	assert.Equal(t, "alice", rolloutAnnotations(t, hubClient, "sluice")[fgv1alpha1.AnnotationApprovedBy])

	// The next revision waits again; Hub.Approve lets it go on.
	require.NoError(t, h2.RegisterGraph(context.Background(), tideRGD(t, "sluice", "Sluice", "3", "")))
	requireAwaiting(t, h2, hubClient, "sluice", 3)
	// mallory may edit the rollout but holds no approve verb: the API
	// server refuses her approval, naming the verb; her other edits pass.
	mallory := rolloutEditor(t, fleet.Hub.Config, "mallory")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		err := patchAnnotation(mallory, "sluice", fgv1alpha1.AnnotationApprove, "main", client.DryRunAll)
		require.Error(ct, err, "the approve check is in place")
		assert.Contains(ct, err.Error(), `needs the verb "approve" on graphrollouts.fleetgraph.dev`)
	}, wait, tick)
	require.Error(t, patchAnnotation(mallory, "sluice", fgv1alpha1.AnnotationApprove, "main"))
	require.NoError(t, patchAnnotation(mallory, "sluice", "example.com/note", "edited"))
	requireAwaiting(t, h2, hubClient, "sluice", 3)
	assert.ErrorIs(t, h2.Approve(context.Background(), "sluice", "no-such-wave"), sdk.ErrUnknownWave)
	assert.ErrorIs(t, h2.Approve(context.Background(), "no-such-rollout", "main"), sdk.ErrNoRollout)
	require.NoError(t, h2.Approve(context.Background(), "sluice", "main"))
	requireRollout(t, h2, "sluice", fgv1alpha1.RolloutComplete, allServe(3))
	requireVersion(t, spokes["spoke-4"], "app", "3")
	requireEventWith(t, fleet, "sluice", "Approved", `wave "main" of revision 3 approved by "`+whoAmI(t, fleet.Hub.Config)+`"`)
}

// impersonating is a client of cfg's API server acting as user name (in
// system:masters, so that only who it is differs).
func impersonating(t *testing.T, cfg *rest.Config, name string) client.Client {
	t.Helper()
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{"system:masters"}}
	return newClient(t, as)
}

// rolloutEditor is a client of cfg's API server acting as user name, who
// may read and edit GraphRollouts (get, list, watch, patch, update) but
// not approve them.
func rolloutEditor(t *testing.T, cfg *rest.Config, name string) client.Client {
	t.Helper()
	admin := newClient(t, cfg)
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name + "-rollout-editor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{fgv1alpha1.GroupVersion.Group}, Resources: []string{"graphrollouts"},
		Verbs: []string{"get", "list", "watch", "patch", "update"},
	}}}
	require.NoError(t, admin.Create(ctx, role))
	require.NoError(t, admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	}))
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: name}
	return newClient(t, as)
}

// patchAnnotation sets annotation key to value on the named GraphRollout.
func patchAnnotation(c client.Client, name, key, value string, opts ...client.PatchOption) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName(name)
	patch := []byte(`{"metadata":{"annotations":{"` + key + `":"` + value + `"}}}`)
	return c.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch), opts...)
}

// whoAmI is the user name cfg's API server authenticates cfg as.
func whoAmI(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return r.Status.UserInfo.Username
}

// setAnnotation sets annotation key to value on the named GraphRollout.
func setAnnotation(t *testing.T, c client.Client, name, key, value string) {
	t.Helper()
	require.NoError(t, patchAnnotation(c, name, key, value))
}

// An approval of a revision not published yet is ignored with a warning
// and removed: when that revision is published, its wave waits for an
// approval of its own. Approvals that cannot apply are never recorded, so
// a stream of them leaves status.approvals as it was.
func TestAnApprovalOfARevisionNotPublishedYetIsIgnored(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t)
	opts := sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}}
	h, _ := startStoppableHub(t, fleet.Hub.Config, provider, opts)
	startRing(t, fleet, h, spokes, "weir", "Weir", gatedWaves())
	hubClient := newClient(t, fleet.Hub.Config)
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "weir", "Weir", "2", "")))
	requireAwaiting(t, h, hubClient, "weir", 2)

	consumed := func() {
		t.Helper()
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NotContains(ct, rolloutAnnotations(ct, hubClient, "weir"), fgv1alpha1.AnnotationApprove, "consumed")
		}, wait, tick)
	}
	approveAs(t, hubClient, "weir", "3", "kubectl-annotate")
	requireEventWith(t, fleet, "weir", "ApprovalIgnored", "revision 3 does not exist yet (the latest is 2)")
	consumed()
	for _, future := range []string{"4", "5", "6", "7", "1"} { // and one already rolled out
		approveAs(t, hubClient, "weir", future, "kubectl-annotate")
		consumed()
	}
	requireEventWith(t, fleet, "weir", "ApprovalIgnored", "revision 1 can no longer be rolled out")
	assert.Empty(t, rolloutStatus(t, hubClient, "weir").Approvals, "nothing that cannot apply is recorded")

	assert.ErrorIs(t, h.Approve(context.Background(), "weir", "9"), sdk.ErrNoSuchRevision)
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "weir", "Weir", "3", "")))
	requireAwaitingFrom(t, h, hubClient, "weir", 3, 1) // the early approval of 3 does not open its wave
	require.NoError(t, h.Approve(context.Background(), "weir", "main"))
	requireRollout(t, h, "weir", fgv1alpha1.RolloutComplete, allServe(3))
	st := rolloutStatus(t, hubClient, "weir")
	require.Len(t, st.Approvals, 1)
	assert.Equal(t, fgv1alpha1.RolloutApproval{Revision: 3, Wave: "main", By: st.Approvals[0].By, At: st.Approvals[0].At}, st.Approvals[0])
}

// approveAs sets the approve annotation on the named GraphRollout as field
// manager manager (kubectl annotate's is "kubectl-annotate").
func approveAs(t *testing.T, c client.Client, name, value, manager string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName(name)
	patch := []byte(`{"metadata":{"annotations":{"` + fgv1alpha1.AnnotationApprove + `":"` + value + `"}}}`)
	require.NoError(t, c.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(manager)))
}

func rolloutAnnotations(t require.TestingT, c client.Client, name string) map[string]string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, u))
	return u.GetAnnotations()
}

func requireEventWith(t *testing.T, fleet *fgtesting.Fleet, rollout, reason, note string) {
	t.Helper()
	c := newClient(t, fleet.Hub.Config)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		events := &eventsv1.EventList{}
		require.NoError(ct, c.List(context.Background(), events))
		assert.True(ct, hasEventWith(events, rollout, reason, note), "event %s on GraphRollout %s saying %s", reason, rollout, note)
	}, wait, tick)
}
