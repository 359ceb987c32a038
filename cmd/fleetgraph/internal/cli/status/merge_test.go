package status

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

func rgd(fleet *v1alpha1.FleetStatus) *v1alpha1.ResourceGraphDefinition {
	return &v1alpha1.ResourceGraphDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp"},
		Spec:       v1alpha1.ResourceGraphDefinitionSpec{Schema: v1alpha1.Schema{APIVersion: "v1alpha1", Kind: "WebApp"}},
		Status: v1alpha1.ResourceGraphDefinitionStatus{
			LastIssuedRevision: 2, Fleet: fleet,
			Conditions: []metav1.Condition{{Type: "Ready", Status: "True"}},
		},
	}
}

func render(t *testing.T, g Graph) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteGraphs(&b, &Fleet{Graphs: []Graph{g}}, Style{}))
	return b.String()
}

// A hub run as the only replica publishes no record: the unhealthy
// clusters get rows, the healthy ones are counted, and the view says so.
func TestOnlyReplicaShowsUnhealthyClustersAndCountsTheRest(t *testing.T) {
	g := sources{rgd: rgd(&v1alpha1.FleetStatus{
		Clusters: 5, Established: 4, Unhealthy: 1, Instances: 7, ReadyInstances: 6,
		UnhealthyClusters: []v1alpha1.ClusterHealth{{Name: "spoke-3", State: "Unreachable", Message: "GET /readyz: context deadline exceeded"}},
	})}.graph()
	assert.Equal(t, int32(4), g.Unlisted)
	assert.Equal(t, `webapp (kro.run/v1alpha1 WebApp)  Ready=True  revision 2  clusters 4/5 established  instances 6/7 ready
CLUSTER  CRD          SERVED  DESIRED  INSTANCES  READY  ERRORS  REACHABLE  MESSAGE
spoke-3  Unreachable  -       -        -          -      -       no         GET /readyz: context deadline exceeded
and 4 more clusters that the hub counts as healthy but does not list (it lists every cluster only in replica status records or a GraphRollout)
`, render(t, g))
}

// A GraphRollout names every placed cluster: one that status.fleet does
// not list as unhealthy (and its list is whole) is established and serves
// what the rollout says; a wave in progress wants the target revision.
func TestRolloutNamesEveryPlacedCluster(t *testing.T) {
	ro := &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp"},
		Spec:       fgv1alpha1.GraphRolloutSpec{Graph: "webapp", Waves: []fgv1alpha1.Wave{{Name: "canary", Clusters: 1}, {Name: "rest", Percent: 100}}},
		Status: fgv1alpha1.GraphRolloutStatus{
			Phase: fgv1alpha1.RolloutProgressing, TargetRevision: 2, StableRevision: 1, Wave: 1, WaveName: "rest",
			Clusters: []fgv1alpha1.RolloutCluster{{Name: "spoke-1", Wave: 0, Revision: 2}, {Name: "spoke-2", Wave: 1, Revision: 1}, {Name: "spoke-3", Wave: 1, Revision: 1}},
		},
	}
	fleet := &v1alpha1.FleetStatus{Clusters: 3, Established: 3, Unhealthy: 2, UnhealthyClusters: []v1alpha1.ClusterHealth{
		{Name: "spoke-2", State: "Updating", Message: "serving generation 1; generation 2 not served yet"},
		{Name: "spoke-3", State: "Updating", Message: "serving generation 1; generation 2 not served yet"},
	}}
	g := sources{rgd: rgd(fleet), rollout: ro}.graph()
	assert.Equal(t, `webapp (kro.run/v1alpha1 WebApp)  Ready=True  revision 2  clusters 3/3 established  instances 0/0 ready
  rollout webapp: Progressing, wave "rest", target 2, stable 1
CLUSTER  CRD          SERVED  DESIRED  INSTANCES  READY  ERRORS  REACHABLE  MESSAGE
spoke-1  Established  2       2        -          -      -       yes
spoke-2  Established  1       2        -          -      -       yes        serving generation 1; generation 2 not served yet
spoke-3  Established  1       2        -          -      -       yes        serving generation 1; generation 2 not served yet
`, render(t, g))

	// A truncated unhealthy list proves nothing about the others.
	fleet.Unhealthy = 3
	g = sources{rgd: rgd(fleet), rollout: ro}.graph()
	assert.Equal(t, "", g.Clusters[0].CRD, "spoke-1 may be one of the unhealthy clusters not listed")
}

// Records give every cluster, with counts; fields a later hub may add
// (instances in error, revisions) are shown when present.
func TestRecordsGiveEveryClusterAndLaterFields(t *testing.T) {
	recs := map[string]recordCluster{
		"spoke-1": {Cluster: "spoke-1", CRD: "Established", Generation: 2, Serving: true, ServedGeneration: 1, Instances: 4, ReadyInstances: 3, ErrorInstances: ptr.To[int64](1)},
		"spoke-2": {Cluster: "spoke-2", CRD: "Conflict", Message: "CRD webapps.kro.run is owned by someone else", Generation: 2},
	}
	g := sources{rgd: rgd(&v1alpha1.FleetStatus{Clusters: 2}), records: recs, revisions: map[int64]int64{1: 1, 2: 2}}.graph()
	assert.Equal(t, `webapp (kro.run/v1alpha1 WebApp)  Ready=True  revision 2  clusters 0/2 established  instances 0/0 ready
CLUSTER  CRD          SERVED  DESIRED  INSTANCES  READY  ERRORS  REACHABLE  MESSAGE
spoke-1  Established  1       2        4          3      1       yes
spoke-2  Conflict     none    2        0          0      -       yes        CRD webapps.kro.run is owned by someone else
`, render(t, g))

	var b bytes.Buffer
	f := &Fleet{Graphs: []Graph{g}, Clusters: []string{"spoke-1", "spoke-2"}}
	require.NoError(t, WriteMatrix(&b, f, Style{}))
	assert.Equal(t, `GRAPH   READY  REVISION  CLUSTERS  INSTANCES  spoke-1  spoke-2
webapp  True   2         0/2       0/0        1→2      Conflict
`, b.String())

	b.Reset()
	require.NoError(t, WriteMatrix(&b, f, Style{MaxColumns: 1}))
	assert.Equal(t, `GRAPH   READY  REVISION  CLUSTERS  INSTANCES  spoke-1  OTHERS
webapp  True   2         0/2       0/0        1→2      0 healthy
`, b.String(), "past --max-columns, only clusters with a problem get a column")
}

// Colour codes are as wide in every cell of a column, so tables stay
// aligned on a terminal.
func TestColoursKeepColumnsAligned(t *testing.T) {
	st := Style{Color: true}
	assert.Equal(t, len(st.paint("x", good)), len(st.paint("x", plain)))
	assert.Equal(t, len(st.paint("x", bad)), len(st.paint("x", busy)))
}

// A cluster waiting its turn in a wave with maxConcurrency, and every
// cluster an automatic rollback took the target back from, should serve
// the stable revision.
func TestDesiredFollowsConcurrencyAndAutomaticRollback(t *testing.T) {
	one := intstr.FromInt32(1)
	ro := &fgv1alpha1.GraphRollout{
		Spec: fgv1alpha1.GraphRolloutSpec{Graph: "webapp", Waves: []fgv1alpha1.Wave{{Name: "canary", Clusters: 1}, {Name: "rest", Percent: 100, MaxConcurrency: &one}}},
		Status: fgv1alpha1.GraphRolloutStatus{
			Phase: fgv1alpha1.RolloutProgressing, TargetRevision: 2, StableRevision: 1, Wave: 1,
			Moving: []fgv1alpha1.RolloutMove{{Name: "spoke-3"}}, Moved: []string{"spoke-2"},
		},
	}
	assert.Equal(t, int64(2), desired(ro, "spoke-1", 0))
	assert.Equal(t, int64(2), desired(ro, "spoke-2", 1), "moved")
	assert.Equal(t, int64(2), desired(ro, "spoke-3", 1), "moving")
	assert.Equal(t, int64(1), desired(ro, "spoke-4", 1), "waits its turn")

	ro.Status.Phase, ro.Status.RollbackWave = fgv1alpha1.RolloutRollingBack, ptr.To(int32(1))
	assert.Equal(t, int64(2), desired(ro, "spoke-1", 0), "the first wave goes back last")
	assert.Equal(t, int64(1), desired(ro, "spoke-3", 1))
	ro.Status.Phase, ro.Status.RollbackWave = fgv1alpha1.RolloutRolledBack, ptr.To(int32(0))
	assert.Equal(t, int64(1), desired(ro, "spoke-1", 0))
}

// A manual rollback in waves wants the revision rolled back to only on the
// waves it reached.
func TestDesiredFollowsAManualRollbackInWaves(t *testing.T) {
	ro := &fgv1alpha1.GraphRollout{
		Spec: fgv1alpha1.GraphRolloutSpec{Graph: "webapp", RollbackTo: 1, RollbackStrategy: fgv1alpha1.RollbackInWaves,
			Waves: []fgv1alpha1.Wave{{Name: "canary", Clusters: 1}, {Name: "rest", Percent: 100}}},
		Status: fgv1alpha1.GraphRolloutStatus{
			Phase: fgv1alpha1.RolloutRollingBack, TargetRevision: 1, StableRevision: 2, Wave: 0,
			ManualRollback: &fgv1alpha1.ManualRollback{Revision: 1, From: 2},
		},
	}
	assert.Equal(t, int64(1), desired(ro, "spoke-1", 0))
	assert.Equal(t, int64(2), desired(ro, "spoke-2", 1), "the rest keeps what it serves until its wave")
	ro.Spec.RollbackStrategy = ""
	assert.Equal(t, int64(1), desired(ro, "spoke-2", 1), "at once")
}
