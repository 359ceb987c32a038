package rollout

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// failedCanary is the rollout a hub restarts into: revision 2's canary
// wave is done, its cluster "b" failed it within maxFailures and went back
// to revision 1, and the main wave waits for approval.
func failedCanary() *fgv1alpha1.GraphRollout {
	one := intstr.FromInt32(1)
	return &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Spec: fgv1alpha1.GraphRolloutSpec{Graph: "g", Waves: []fgv1alpha1.Wave{
			{Name: "canary", Clusters: 2, MaxFailures: &one},
			{Name: "main", Percent: 100, Approval: fgv1alpha1.ApprovalRequired},
		}},
		Status: fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutProgressing, TargetRevision: 2, StableRevision: 1,
			Wave: 1, AwaitingApproval: "main",
			Failed: []fgv1alpha1.RolloutCluster{{Name: "b", Wave: 0, Revision: 1}}},
	}
}

// restartedController is a restarted hub's Controller over the API
// server c, its Planner waiting for the rollouts as the hub's does, with
// clusters a, b (canary) and c (main) engaged and revision 2 registered.
func restartedController(c client.Client) *Controller {
	planner := NewPlanner(nil, func() []Cluster { return []Cluster{{Name: "a"}, {Name: "b"}, {Name: "c"}} })
	planner.AwaitRollouts()
	return &Controller{
		Client:  c,
		Planner: planner,
		Resync:  10 * time.Millisecond,
		Logger:  logr.Discard(),
		Hooks: Hooks{
			Graphs:  func() []string { return []string{"g"} },
			Latest:  func(string) int64 { return 2 },
			Offered: func(string) int64 { return 2 },
			Observe: func(string) map[string]Observation {
				return map[string]Observation{"a": {Revision: 2, Established: true}, "b": {Revision: 1, Established: true},
					"c": {Revision: 1, Established: true}}
			},
			List:          func(context.Context, string, string) (int, error) { return 0, nil },
			Reconsider:    func(string, string, bool) {},
			ServeRevision: func(context.Context, string, int64) error { return nil },
		},
	}
}

// startController runs c.Start until the test ends.
func startController(t *testing.T, c *Controller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, c.Start(ctx))
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// isCRD reports whether obj is a CustomResourceDefinition.
func isCRD(obj client.Object) bool {
	u, ok := obj.(*unstructured.Unstructured)
	return ok && u.GetKind() == "CustomResourceDefinition"
}

// A restarted hub whose GraphRollout CRD cannot be installed again (the
// hub's API server times out reading it, say) still has the GraphRollouts
// an earlier run stored: it decides by their status from its first
// decision, and never serves the cluster that failed the canary wave the
// revision it failed, nor the main wave the revision awaiting approval.
// It used to serve every revision everywhere until the install passed.
func TestARestartedHubThatCannotInstallTheCRDDecidesByTheStoredStatus(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, fgv1alpha1.AddToScheme(scheme))
	ro := failedCanary()
	gets := atomic.Int32{}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ro).WithStatusSubresource(ro).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if isCRD(obj) {
					gets.Add(1)
					return apierrors.NewTimeoutError("the hub is busy", 1)
				}
				return c.Get(ctx, key, obj, opts...)
			},
		}).Build()
	c := restartedController(cl)
	c.Resync = time.Hour // one install attempt: the decisions come from it
	startController(t, c)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Planner.Ready(ctx))
	assert.Equal(t, int32(1), gets.Load(), "the CRD install was tried once and failed")
	assert.NoError(t, c.Planner.Decide("g", "a", 2), "the canary that passed keeps revision 2")
	assert.ErrorIs(t, c.Planner.Decide("g", "b", 2), ErrHeldBack, "the canary that failed revision 2 does not get it")
	assert.Equal(t, int64(1), c.Planner.FallBackTo("g", "b"))
	assert.ErrorIs(t, c.Planner.Decide("g", "c", 2), ErrHeldBack, "the main wave awaits approval")
	st, ok := c.Status("g")
	require.True(t, ok)
	assert.Equal(t, "main", st.AwaitingApproval)
}

// Without the GraphRollout kind on the hub no rollout can exist: a hub
// that cannot install the CRD serves its graphs without rollouts rather
// than not at all. A failure to read the rollouts leaves every decision
// waiting instead.
func TestAHubThatCannotInstallTheCRDServesWithoutRolloutsOnlyWhenNoneCanExist(t *testing.T) {
	for _, tc := range []struct {
		name    string
		listErr error
		loaded  bool
	}{
		{"kind not served", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: fgv1alpha1.GroupVersion.Group, Kind: "GraphRollout"}}, true},
		{"hub unavailable", apierrors.NewServiceUnavailable("etcd is down"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			require.NoError(t, fgv1alpha1.AddToScheme(scheme))
			lists := atomic.Int32{}
			cl := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if isCRD(obj) {
						return apierrors.NewServiceUnavailable("etcd is down")
					}
					return c.Get(ctx, key, obj, opts...)
				},
				List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					lists.Add(1)
					return tc.listErr
				},
			}).Build()
			c := restartedController(cl)
			startController(t, c)
			require.Eventually(t, func() bool { return lists.Load() >= 2 }, 10*time.Second, time.Millisecond,
				"the rollouts are read after each failed install")
			if tc.loaded {
				assert.NoError(t, c.Planner.Decide("g", "b", 2))
				return
			}
			assert.ErrorIs(t, c.Planner.Decide("g", "b", 2), ErrNotLoaded)
		})
	}
}

// The fallback serves what a cluster's CRD was applied from, unless the
// rollout refuses that revision there: the cluster that failed revision 2
// keeps its CRD labelled 2 (the fallback does not re-apply it), and a
// restarted hub offering that spec under another number, or unnumbered
// when its revision record failed, must still serve it revision 1.
func TestTheFallbackServesAFailedClusterTheRevisionItWentBackTo(t *testing.T) {
	planner := NewPlanner(nil, func() []Cluster { return []Cluster{{Name: "a"}, {Name: "b"}, {Name: "c"}} })
	planner.set(map[string]*plan{"g": planOf(failedCanary())})
	assert.Equal(t, int64(1), planner.FallBackFrom("g", "b", 2), "the failed canary goes back to revision 1")
	assert.Equal(t, int64(1), planner.FallBackFrom("g", "b", 1))
	assert.Equal(t, int64(2), planner.FallBackFrom("g", "a", 2), "the canary that passed keeps revision 2")
	assert.Equal(t, int64(1), planner.FallBackFrom("g", "c", 1), "the main wave keeps revision 1")
	assert.Equal(t, int64(0), planner.FallBackFrom("g", "b", 0), "no CRD, nothing to fall back to")
}

// midMainWave is a rollout a hub restarts into: revision 2 passed the
// canary wave (a) and the main wave (b, c) is in progress, started
// startedAgo ago, with maxFailures failures allowed.
func midMainWave(startedAgo time.Duration, maxFailures int32) *fgv1alpha1.GraphRollout {
	budget := intstr.FromInt32(maxFailures)
	started := metav1.NewTime(time.Now().Add(-startedAgo).Truncate(time.Second))
	return &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Spec: fgv1alpha1.GraphRolloutSpec{Graph: "g", ProgressDeadlineSeconds: 60, Waves: []fgv1alpha1.Wave{
			{Name: "canary", Clusters: 1},
			{Name: "main", Percent: 100, MaxFailures: &budget},
		}},
		Status: fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutProgressing, TargetRevision: 2, StableRevision: 1,
			Wave: 1, WaveStarted: &started, Clusters: []fgv1alpha1.RolloutCluster{
				{Name: "a", Wave: 0, Revision: 2}, {Name: "b", Wave: 1, Revision: 2}, {Name: "c", Wave: 1, Revision: 1}}},
	}
}

// restartedWith is a restarted hub's Controller over a fake API server
// holding ro, with the clusters *engaged engaged, each serving revision 2
// healthily.
func restartedWith(t *testing.T, ro *fgv1alpha1.GraphRollout, engaged *[]string) *Controller {
	t.Helper()
	c := restartedController(storedRollout(t, ro))
	c.Planner = NewPlanner(nil, func() []Cluster {
		out := make([]Cluster, len(*engaged))
		for i, name := range *engaged {
			out[i].Name = name
		}
		return out
	})
	c.Hooks.Observe = func(string) map[string]Observation {
		out := map[string]Observation{}
		for _, name := range *engaged {
			out[name] = Observation{Revision: 2, Established: true}
		}
		return out
	}
	return c
}

// A restarted hub that has engaged only some of the main wave's clusters
// does not pass the wave on them: the one the stored status lists and the
// hub has not engaged yet holds it back, and the wave passes once that one
// is engaged and healthy. It used to pass at once.
func TestARestartedHubDoesNotPassAWaveOnTheClustersEngagedFirst(t *testing.T) {
	engaged := []string{"a", "b"}
	c := restartedWith(t, midMainWave(time.Second, 0), &engaged)
	ctx := context.Background()
	require.NoError(t, c.tick(ctx))
	st, _ := c.Status("g")
	require.Equal(t, fgv1alpha1.RolloutProgressing, st.Phase, st.Message)
	require.Len(t, st.HoldingBack, 1)
	assert.Equal(t, "c", st.HoldingBack[0].Name)
	assert.Equal(t, notEngaged, st.HoldingBack[0].Message)
	assert.Contains(t, clustersByName(st.Clusters), "c", "still listed, for the next restart")
	assert.ErrorIs(t, c.Planner.Decide("g", "c", 2), ErrNotPlaced, "not engaged: nothing is decided for it")

	engaged = append(engaged, "c")
	require.NoError(t, c.tick(ctx))
	st, _ = c.Status("g")
	assert.Equal(t, fgv1alpha1.RolloutComplete, st.Phase, st.Message)
}

// The wait for a cluster that really left is bounded: a progress deadline
// after the restarted hub's first look (not after the wave started, which
// may be long before), it is judged like any cluster unhealthy at its
// deadline. Within maxFailures it is listed failed and the wave passes;
// past them the wave fails, and a resume goes on without it.
func TestARestartedHubJudgesAClusterThatNeverCameBackAtItsDeadline(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		maxFailures int32
		phase       string
	}{
		{"within maxFailures", 1, fgv1alpha1.RolloutComplete},
		{"past maxFailures", 0, fgv1alpha1.RolloutFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			engaged := []string{"a", "b"}
			c := restartedWith(t, midMainWave(time.Hour, tc.maxFailures), &engaged)
			require.NoError(t, c.tick(ctx))
			st, _ := c.Status("g")
			require.Equal(t, fgv1alpha1.RolloutProgressing, st.Phase, "the wave's deadline passed long ago, but the hub just started: %s", st.Message)

			c.mu.Lock()
			c.awaited.m["g"].since = time.Now().Add(-61 * time.Second) // the deadline after the first look passed
			c.mu.Unlock()
			require.NoError(t, c.tick(ctx))
			st, _ = c.Status("g")
			require.Equal(t, tc.phase, st.Phase, st.Message)
			if tc.phase == fgv1alpha1.RolloutComplete {
				require.Len(t, st.Failed, 1)
				assert.Equal(t, "c", st.Failed[0].Name)
				assert.Equal(t, int64(1), st.Failed[0].Revision, "if it comes back it serves the stable revision")
				assert.Contains(t, st.Failed[0].Message, notEngaged)
				return
			}
			assert.Contains(t, st.Message, "c: "+notEngaged)
			require.NoError(t, c.Patch(ctx, "g", []byte(`{"metadata":{"annotations":{"`+fgv1alpha1.AnnotationResume+`":"now"}}}`)))
			require.NoError(t, c.tick(ctx))
			st, _ = c.Status("g")
			assert.Equal(t, fgv1alpha1.RolloutComplete, st.Phase, "resumed without it: %s", st.Message)
		})
	}
}
