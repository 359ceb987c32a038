package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// etcdRequestLimit is etcd's default --max-request-bytes: an object whose
// update passes it is refused, and a rollout that cannot write its status
// stops moving.
const etcdRequestLimit = 1536 * 1024

// A one-wave rollout across 10,000 clusters served by two replicas, half
// of them holding the wave back: the stored object fits well within what
// etcd takes, holdingBack lists its bound and counts all 5,000, and every
// waiting cluster keeps its why in status.clusters. The replica that does
// not serve the waiting clusters reads their why from there (past the
// bound, holdingBack no longer has it): it still counts all 5,000 and
// does not call the wave healthy.
func TestATenThousandClusterWaveFitsItsStatus(t *testing.T) {
	const n = 10000
	ro, mine, theirs := tenThousandWave(n)
	c := storedRollout(t, ro)
	ready := func(r int) Observation {
		return Observation{Revision: 2, Established: true, Serving: true, Instances: 1, Ready: r, Listed: 1}
	}
	a := replicaController(c, mine, observed(mine, ready(1)), foreigners(theirs))
	b := replicaController(c, theirs, observed(theirs, ready(0)), foreigners(mine))
	ctx := context.Background()

	require.NoError(t, a.tick(ctx)) // b's clusters as stored: serving revision 1
	for _, r := range []*Controller{b, a, b} {
		require.NoError(t, r.tick(ctx))
		st := readStatus(t, c)
		require.Equal(t, n, len(st.Clusters))
		assert.Equal(t, fgv1alpha1.RolloutProgressing, st.Phase, st.Message)
		assert.Len(t, st.HoldingBack, fgv1alpha1.MaxHoldingBackListed)
		assert.Equal(t, int32(len(theirs)), st.HoldingBackCount, "every waiting cluster counted, by either replica")
		assert.Equal(t, theirs[:fgv1alpha1.MaxHoldingBackListed], names(st.HoldingBack))
		for _, cl := range st.Clusters {
			if cl.Name[len(cl.Name)-1]%2 == 1 {
				assert.Contains(t, cl.Message, "0 of 1 instances Ready", cl.Name)
			} else {
				assert.Empty(t, cl.Message, cl.Name)
			}
		}
	}
	size := storedSize(t, c)
	t.Logf("stored GraphRollout of %d clusters, %d waiting: %d bytes", n, len(theirs), size)
	assert.Less(t, size, etcdRequestLimit*2/3)
}

// tenThousandWave is a one-wave rollout, complete at revision 1, of n
// clusters, and the two halves two replicas serve.
func tenThousandWave(n int) (ro *fgv1alpha1.GraphRollout, mine, theirs []string) {
	var listed []fgv1alpha1.RolloutCluster
	for i := range n {
		name := fmt.Sprintf("fleetgraph-scale-%05d", i)
		listed = append(listed, fgv1alpha1.RolloutCluster{Name: name, Revision: 1, Desired: 1})
		if i%2 == 0 {
			mine = append(mine, name)
		} else {
			theirs = append(theirs, name)
		}
	}
	return &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Spec:       fgv1alpha1.GraphRolloutSpec{Graph: "g", Waves: []fgv1alpha1.Wave{{Name: "all", Percent: 100}}},
		Status:     fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutComplete, TargetRevision: 1, StableRevision: 1, Wave: 1, Clusters: listed},
	}, mine, theirs
}

// storedRollout is a fake API server holding ro as the Controller writes
// it (unstructured): the fake client lists an object seeded typed and
// updated unstructured no more.
func storedRollout(t *testing.T, ro *fgv1alpha1.GraphRollout) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, fgv1alpha1.AddToScheme(scheme))
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(u).WithStatusSubresource(u).Build()
}

func observed(names []string, o Observation) map[string]Observation {
	out := make(map[string]Observation, len(names))
	for _, n := range names {
		out[n] = o
	}
	return out
}

func foreigners(names []string) func() map[string]Foreign {
	return func() map[string]Foreign {
		out := make(map[string]Foreign, len(names))
		for _, n := range names {
			out[n] = Foreign{Replica: "other"}
		}
		return out
	}
}

func storedSize(t *testing.T, c client.Client) int {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "g"}, u))
	b, err := json.Marshal(u.Object)
	require.NoError(t, err)
	return len(b)
}

// A status no step rewrites (a refused health condition freezes it) holds
// holdingBack as stored, bounded: the clusters past the bound keep the why
// status.clusters gave them, so the other replicas still see them wait.
func TestAFrozenStatusKeepsTheWhyPastTheBound(t *testing.T) {
	st := &fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutProgressing, TargetRevision: 2, StableRevision: 1,
		HoldingBack:      []fgv1alpha1.RolloutCluster{{Name: "a", Revision: 1, Message: "serves revision 1"}},
		HoldingBackCount: 2}
	before := []fgv1alpha1.RolloutCluster{
		{Name: "a", Revision: 1, Desired: 2, Message: "serves revision 1"},
		{Name: "b", Revision: 1, Desired: 2, Message: "serves revision 1"},
		{Name: "c", Revision: 2, Desired: 2},
	}
	serves := func(rev int64) Observation { return Observation{Revision: rev, Serving: true, Established: true} }
	describeClusters(st, fgv1alpha1.GraphRolloutSpec{Graph: "g"}, clusterFacts{
		waves:  map[string]int32{"a": 0, "b": 0, "c": 0},
		obs:    map[string]Observation{"a": serves(1), "b": serves(1), "c": serves(2)},
		before: before,
	})
	require.Len(t, st.Clusters, 3)
	assert.Equal(t, "serves revision 1", st.Clusters[0].Message)
	assert.Equal(t, "serves revision 1", st.Clusters[1].Message, "past the bound, from status.clusters")
	assert.Empty(t, st.Clusters[2].Message)
}

// Every one of 10,000 clusters waits with a long message a spoke wrote
// (a CRD refused there, say): status.clusters cuts the messages to a
// share of its bound, on a character's boundary and marked, so that the
// status still fits what etcd stores; each stays non-empty, so the other
// replica still counts every cluster as waiting.
func TestLongMessagesAcrossTenThousandClustersAreCutToFit(t *testing.T) {
	const n = 10000
	ro, mine, theirs := tenThousandWave(n)
	c := storedRollout(t, ro)
	long := "the spoke refused the CRD: " + strings.Repeat("schéma ", 60)
	refused := Observation{Revision: 1, Message: long}
	a := replicaController(c, mine, observed(mine, refused), foreigners(theirs))
	b := replicaController(c, theirs, observed(theirs, refused), foreigners(mine))
	ctx := context.Background()
	for _, r := range []*Controller{a, b, a} {
		require.NoError(t, r.tick(ctx))
	}
	st := readStatus(t, c)
	require.Equal(t, n, len(st.Clusters))
	assert.Equal(t, int32(n), st.HoldingBackCount, "every cluster still waits, the other replica's included")
	assert.Equal(t, long, st.HoldingBack[0].Message, "the listed ones keep their whole message")
	for _, cl := range st.Clusters {
		require.True(t, utf8.ValidString(cl.Message), cl.Name)
		require.True(t, strings.HasPrefix(cl.Message, "the spoke refused the CRD"), cl.Name)
		require.True(t, strings.HasSuffix(cl.Message, "…"), cl.Name)
	}
	size := storedSize(t, c)
	t.Logf("stored GraphRollout of %d clusters, all waiting with %d-byte messages: %d bytes", n, len(long), size)
	assert.Less(t, size, etcdRequestLimit-256<<10, "room left for metadata and managed fields")
}

// A status an older hub wrote (every waiting cluster listed, none
// counted) that no step rewrites is bounded with its count, so that the
// clusters past the bound keep their why afterwards.
func TestAnUncountedHoldingBackIsCountedWhenBounded(t *testing.T) {
	st := &fgv1alpha1.GraphRolloutStatus{}
	for i := range fgv1alpha1.MaxHoldingBackListed + 5 {
		st.HoldingBack = append(st.HoldingBack, fgv1alpha1.RolloutCluster{Name: fmt.Sprintf("c-%03d", i), Message: "serves revision 1"})
	}
	listBounded(st)
	assert.Len(t, st.HoldingBack, fgv1alpha1.MaxHoldingBackListed)
	assert.Equal(t, int32(fgv1alpha1.MaxHoldingBackListed+5), st.HoldingBackCount)
	listBounded(st)
	assert.Equal(t, int32(fgv1alpha1.MaxHoldingBackListed+5), st.HoldingBackCount, "bounding again keeps the count")
}

// Every cluster that holds a wave back has its why in status.clusters,
// whatever the wait: a wave going back to the stable revision in a
// rollback, as well as a wave moving forward. (Past holdingBack's bound,
// status.clusters is the only place that says why.)
func TestEveryWaitingClusterHasItsWhyInStatusClusters(t *testing.T) {
	t0, ro, f := brokenWaveTwo()
	phases := map[string]bool{}
	for i := 1; i < 40 && ro.Status.Phase != fgv1alpha1.RolloutRolledBack; i++ {
		step(metav1.NewTime(t0.Add(time.Duration(3*i)*time.Second)), ro, 2, f.waves, f.observe())
		st := ro.Status
		describeClusters(&ro.Status, ro.Spec, clusterFacts{waves: f.waves, obs: f.observe()})
		listed := clustersByName(ro.Status.Clusters)
		for _, w := range st.HoldingBack {
			phases[st.Phase] = true
			assert.Equal(t, w.Message, listed[w.Name].Message, "%s, %s in wave %q", w.Name, st.Phase, st.WaveName)
		}
		f.apply(ro, 2)
	}
	assert.True(t, phases[fgv1alpha1.RolloutRollingBack], "a wave held back while rolling back: %v", phases)
	assert.True(t, phases[fgv1alpha1.RolloutProgressing], "a wave held back while progressing: %v", phases)
}

// The most a 10,000-cluster rollout records: a wave limited by
// maxConcurrency whose every cluster moved but one that still moves,
// MaxFailedClusters of them failed within its budget, each with a long
// message a spoke wrote. The stored object still fits what etcd takes,
// with room to spare.
func TestTheMostFailuresARolloutRecordsFitItsStatus(t *testing.T) {
	const n = 10000
	ro, all, obs := mostFailures(n, fgv1alpha1.MaxFailedClusters)
	c := storedRollout(t, ro)
	require.NoError(t, replicaController(c, all, obs, nil).tick(context.Background()))
	st := readStatus(t, c)
	require.Len(t, st.Failed, fgv1alpha1.MaxFailedClusters, st.Message)
	require.Len(t, st.Moved, n-fgv1alpha1.MaxFailedClusters-1)
	size := storedSize(t, c)
	t.Logf("stored GraphRollout of %d clusters, %d failed with long messages, %d moved: %d bytes",
		n, len(st.Failed), len(st.Moved), size)
	assert.Less(t, size, etcdRequestLimit-128<<10, "room left for metadata and managed fields")
}

// mostFailures is a one-wave rollout of n clusters, limited by
// maxConcurrency, past its deadline: every cluster moved long ago but the
// last, which still moves; the first failing of them are unhealthy, with
// a long message a spoke wrote, within a budget of 50%.
func mostFailures(n, failing int) (ro *fgv1alpha1.GraphRollout, all []string, obs map[string]Observation) {
	ro, mine, theirs := tenThousandWave(n)
	all = append(append([]string{}, mine...), theirs...)
	budget, limit := intstr.FromString("50%"), intstr.FromInt32(1000)
	ro.Spec.ProgressDeadlineSeconds = 60
	ro.Spec.Waves[0].MaxFailures, ro.Spec.Waves[0].MaxConcurrency = &budget, &limit
	started := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	ro.Status.Phase, ro.Status.TargetRevision, ro.Status.Wave, ro.Status.WaveStarted =
		fgv1alpha1.RolloutProgressing, 2, 0, &started
	obs = map[string]Observation{}
	for i, name := range all {
		since := started
		obs[name] = Observation{Revision: 2, Established: true, Serving: true, Instances: 1, Ready: 1, Listed: 1}
		switch {
		case i < failing:
			obs[name] = Observation{Revision: 1, Message: longSpokeMessage}
		case i == n-1: // keeps the wave from completing
			since = metav1.NewTime(time.Now().Truncate(time.Second))
			obs[name] = Observation{Revision: 2, Established: true, Serving: true, Instances: 1, Listed: 1}
		}
		ro.Status.Moving = append(ro.Status.Moving, fgv1alpha1.RolloutMove{Name: name, Since: since})
	}
	return ro, all, obs
}

// longSpokeMessage is a long message a spoke wrote (507 bytes).
var longSpokeMessage = "the spoke refused the CRD: " + strings.Repeat("schéma ", 60)
