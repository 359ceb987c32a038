package rollout

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// replicaController is one of two hub replicas: it engages mine, observed
// as obs, and others are the other replica's clusters.
func replicaController(c client.Client, mine []string, obs map[string]Observation, others func() map[string]Foreign) *Controller {
	var byGraph func(string) (map[string]Foreign, bool)
	if others != nil {
		byGraph = func(string) (map[string]Foreign, bool) { return others(), true }
	}
	engaged := make([]Cluster, len(mine))
	for i, n := range mine {
		engaged[i] = Cluster{Name: n}
	}
	return &Controller{
		Client:  c,
		Planner: NewPlanner(nil, func() []Cluster { return engaged }),
		Logger:  logr.Discard(),
		Hooks: Hooks{
			Graphs:        func() []string { return []string{"g"} },
			Latest:        func(string) int64 { return 2 },
			Offered:       func(string) int64 { return 2 },
			Observe:       func(string) map[string]Observation { return obs },
			List:          func(context.Context, string, string) (int, error) { return 1, nil },
			Reconsider:    func(string, string, bool) {},
			ServeRevision: func(context.Context, string, int64) error { return nil },
			Others:        byGraph,
		},
	}
}

func readStatus(t *testing.T, c client.Client) fgv1alpha1.GraphRolloutStatus {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "g"}, u))
	ro := &fgv1alpha1.GraphRollout{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ro))
	return ro.Status
}

func names(cs []fgv1alpha1.RolloutCluster) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// Two replicas stepping one rollout each write every cluster, theirs as
// they observe it and the other's as the status says; a cluster the
// other replica holds back holds the wave back here too; and a cluster
// whose replica stopped is listed as such until another takes it.
func TestReplicasShareTheRolloutsStatus(t *testing.T) {
	ro := &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Spec:       fgv1alpha1.GraphRolloutSpec{Graph: "g", Waves: []fgv1alpha1.Wave{{Name: "all", Percent: 100}}},
		Status: fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutComplete, TargetRevision: 1, StableRevision: 1, Wave: 1,
			Clusters: []fgv1alpha1.RolloutCluster{{Name: "a", Revision: 1, Desired: 1}, {Name: "b", Revision: 1, Desired: 1}}},
	}
	c := storedRollout(t, ro)
	ready := func(rev int64, n int) Observation {
		return Observation{Revision: rev, Established: true, Serving: true, Instances: 1, Ready: n, Listed: 1}
	}
	foreign := func(names ...string) func() map[string]Foreign {
		return func() map[string]Foreign {
			out := map[string]Foreign{}
			for _, n := range names {
				out[n] = Foreign{Replica: "other"}
			}
			return out
		}
	}
	a := replicaController(c, []string{"a"}, map[string]Observation{"a": ready(2, 1)}, foreign("b"))
	bObs := map[string]Observation{"b": ready(2, 0)}
	b := replicaController(c, []string{"b"}, bObs, foreign("a"))
	ctx := context.Background()

	require.NoError(t, a.tick(ctx))
	require.NoError(t, b.tick(ctx))
	require.NoError(t, a.tick(ctx))
	st := readStatus(t, c)
	assert.Equal(t, []string{"a", "b"}, names(st.Clusters), "every cluster listed once")
	assert.Equal(t, int64(2), st.TargetRevision)
	assert.Equal(t, fgv1alpha1.RolloutProgressing, st.Phase, "b, the other replica's, holds the wave back: %s", st.Message)
	assert.Equal(t, []string{"b"}, names(st.HoldingBack))
	assert.Contains(t, st.HoldingBack[0].Message, "0 of 1 instances Ready")

	bObs["b"] = ready(2, 1)
	require.NoError(t, b.tick(ctx))
	require.NoError(t, a.tick(ctx))
	st = readStatus(t, c)
	assert.Equal(t, fgv1alpha1.RolloutComplete, st.Phase, st.Message)
	assert.Equal(t, []string{"a", "b"}, names(st.Clusters))
	for _, cl := range st.Clusters {
		assert.Equal(t, int64(2), cl.Revision, cl.Name)
	}

	gone := replicaController(c, []string{"a"}, map[string]Observation{"a": ready(2, 1)},
		func() map[string]Foreign { return map[string]Foreign{"b": {Replica: "other", Gone: true}} })
	require.NoError(t, gone.tick(ctx))
	st = readStatus(t, c)
	require.Equal(t, []string{"a", "b"}, names(st.Clusters))
	assert.Equal(t, "hub replica other, which served the cluster, stopped; no other replica has taken it over yet", st.Clusters[1].Message)
	assert.Equal(t, int64(2), st.Clusters[1].Revision, "as last written")

	alone := replicaController(c, []string{"a"}, map[string]Observation{"a": ready(2, 1)}, nil)
	require.NoError(t, alone.tick(ctx))
	assert.Equal(t, []string{"a"}, names(readStatus(t, c).Clusters), "a cluster no replica serves leaves the list")
}

// A cluster the status lists as serving a revision keeps it there until
// the hub observes what serves it: right after a restart (or a takeover)
// it is not listed at revision 0.
func TestAClusterNotObservedYetKeepsItsRevision(t *testing.T) {
	st := &fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutComplete, TargetRevision: 2, StableRevision: 2, Wave: 1}
	spec := fgv1alpha1.GraphRolloutSpec{Graph: "g"}
	describeClusters(st, spec, clusterFacts{
		waves:  map[string]int32{"a": 0, "b": 0},
		obs:    map[string]Observation{"a": {Revision: 2, Serving: true, Established: true}, "b": {}},
		before: []fgv1alpha1.RolloutCluster{{Name: "a", Revision: 2}, {Name: "b", Revision: 2}},
	})
	require.Len(t, st.Clusters, 2)
	assert.Equal(t, int64(2), st.Clusters[1].Revision)
}

// A replica that does not know yet which clusters the others serve keeps
// every cluster the status lists that it does not place, held ones
// included: dropped, a held cluster's pin would be lost, and its replica
// would pin it again at another revision.
func TestAReplicaKeepsTheClustersItDoesNotKnowYet(t *testing.T) {
	ro := &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Spec: fgv1alpha1.GraphRolloutSpec{Graph: "g", Waves: []fgv1alpha1.Wave{{Name: "all", Percent: 100}},
			Holds: []fgv1alpha1.Hold{{Clusters: []string{"b"}, Reason: "freeze"}}},
		Status: fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutComplete, TargetRevision: 2, StableRevision: 2, Wave: 1,
			Clusters: []fgv1alpha1.RolloutCluster{{Name: "a", Revision: 2, Desired: 2}, {Name: "b", Revision: 1, Desired: 1, Held: true, HoldReason: "freeze"}}},
	}
	c := storedRollout(t, ro)
	ready := Observation{Revision: 2, Established: true, Serving: true, Instances: 1, Ready: 1, Listed: 1}
	a := replicaController(c, []string{"a"}, map[string]Observation{"a": ready}, nil)
	a.Hooks.Others = func(string) (map[string]Foreign, bool) { return nil, false }

	require.NoError(t, a.tick(context.Background()))
	st := readStatus(t, c)
	require.Equal(t, []string{"a", "b"}, names(st.Clusters))
	assert.Equal(t, fgv1alpha1.RolloutCluster{Name: "b", Revision: 1, Desired: 1, Held: true, HoldReason: "freeze"}, st.Clusters[1], "b's pin kept")
	assert.Equal(t, map[string]int64{"b": 1}, heldPins(st))
}
