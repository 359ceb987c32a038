package rollout

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// The runtime is offered the revision a rollback in waves goes back to
// only once the Planner holds it off the waves not reached: offered under
// the previous plan (a complete rollout, which lets any older revision
// go), every cluster would take it at once and label its CRD with it.
func TestARollbackInWavesIsOfferedOnlyUnderItsOwnPlan(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, fgv1alpha1.AddToScheme(scheme))
	ro := &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Spec: fgv1alpha1.GraphRolloutSpec{Graph: "g",
			Waves: []fgv1alpha1.Wave{{Name: "canary", Clusters: 1}, {Name: "main", Percent: 100}}},
		Status: fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutComplete, TargetRevision: 2, StableRevision: 2, Wave: 2},
	}
	planner := NewPlanner(nil, func() []Cluster { return []Cluster{{Name: "a"}, {Name: "b"}} })
	planner.set(map[string]*plan{"g": planOf(ro)}) // the previous look's plan

	ro.Spec.RollbackTo, ro.Spec.RollbackStrategy = 1, fgv1alpha1.RollbackInWaves
	offered := int64(2)
	var whenOffered map[string]error
	c := &Controller{
		Client:  fake.NewClientBuilder().WithScheme(scheme).WithObjects(ro).WithStatusSubresource(ro).Build(),
		Planner: planner,
		Logger:  logr.Discard(),
		Hooks: Hooks{
			Graphs:  func() []string { return []string{"g"} },
			Latest:  func(string) int64 { return 2 },
			Offered: func(string) int64 { return offered },
			Observe: func(string) map[string]Observation {
				return map[string]Observation{"a": {Revision: 2, Established: true}, "b": {Revision: 2, Established: true}}
			},
			List:       func(context.Context, string, string) (int, error) { return 0, nil },
			Reconsider: func(string, string, bool) {},
			ServeRevision: func(_ context.Context, _ string, rev int64) error {
				whenOffered = map[string]error{"a": planner.Decide("g", "a", rev), "b": planner.Decide("g", "b", rev)}
				offered = rev
				return nil
			},
		},
	}
	require.NoError(t, c.tick(context.Background()))
	require.NotNil(t, whenOffered, "revision 1 is offered")
	assert.Equal(t, int64(1), offered)
	assert.NoError(t, whenOffered["a"], "the canary may take it")
	assert.ErrorIs(t, whenOffered["b"], ErrHeldBack, "the main wave may not, from the moment it is offered")
	st, ok := c.Status("g")
	require.True(t, ok)
	assert.Equal(t, fgv1alpha1.RolloutRollingBack, st.Phase)
}
