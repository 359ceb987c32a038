package instance

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func refByName(cluster, ns, name string) resolvedRef {
	return resolvedRef{cluster: cluster, gvk: cmGVK, namespace: ns, name: name}
}

func refBySelector(t *testing.T, cluster, ns, sel string) resolvedRef {
	s, err := labels.Parse(sel)
	require.NoError(t, err)
	return resolvedRef{cluster: cluster, gvk: cmGVK, namespace: ns, selector: s}
}

func labelled(ns, name string, l map[string]string) *unstructured.Unstructured {
	u := objectNamed(ns, name)
	u.SetLabels(l)
	return u
}

// An event on an external object requeues the instances that read it, in
// that cluster, and no other.
func TestExternalReadersByName(t *testing.T) {
	e := testEngine()
	a, b := types.NamespacedName{Namespace: "team-a", Name: "a"}, types.NamespacedName{Namespace: "team-b", Name: "b"}
	e.refs.set(a, []resolvedRef{refByName("spoke-1", "team-a", "cfg")})
	e.refs.set(b, []resolvedRef{refByName("spoke-2", "team-a", "cfg")})

	assert.Equal(t, []types.NamespacedName{a}, e.refs.referrers("spoke-1", cmGVK, objectNamed("team-a", "cfg")))
	assert.Equal(t, []types.NamespacedName{b}, e.refs.referrers("spoke-2", cmGVK, objectNamed("team-a", "cfg")), "the same name read in another cluster")
	assert.Empty(t, e.refs.referrers("spoke-1", cmGVK, objectNamed("team-a", "other")), "another name")
	assert.Empty(t, e.refs.referrers("spoke-1", cmGVK, objectNamed("team-b", "cfg")), "another namespace")
	assert.Empty(t, e.refs.referrers("spoke-3", cmGVK, objectNamed("team-a", "cfg")), "another cluster")
	assert.Empty(t, e.refs.referrers("spoke-1", schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, objectNamed("team-a", "cfg")), "another kind")
}

// A reference by selector is requeued by an object of its cluster whose
// labels it selects, in its namespace.
func TestExternalReadersBySelector(t *testing.T) {
	e := testEngine()
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	e.refs.set(a, []resolvedRef{refBySelector(t, "spoke-1", "ns", "peer=a")})
	assert.Equal(t, []types.NamespacedName{a}, e.refs.referrers("spoke-1", cmGVK, labelled("ns", "x", map[string]string{"peer": "a"})))
	assert.Empty(t, e.refs.referrers("spoke-1", cmGVK, labelled("ns", "x", map[string]string{"peer": "b"})), "not selected")
	assert.Empty(t, e.refs.referrers("spoke-1", cmGVK, labelled("other", "x", map[string]string{"peer": "a"})), "another namespace")
	assert.Empty(t, e.refs.referrers("spoke-2", cmGVK, labelled("ns", "x", map[string]string{"peer": "a"})), "another cluster")
}

// What the references cost is bounded by the instances and their graph,
// not by what a tenant's objects hold: each instance keeps the references
// of its last evaluation only, whatever it read before, and an instance
// gone keeps none.
func TestExternalSeenIsBounded(t *testing.T) {
	e := testEngine()
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	for i := range 100 {
		e.refs.set(a, []resolvedRef{refByName("spoke-1", "ns", fmt.Sprint("cfg-", i))})
	}
	assert.Len(t, e.refs.refs[a], 1)
	assert.Len(t, e.refs.index, 1, "the references read before are unindexed")
	e.ForgetInstance(a, "")
	assert.Empty(t, e.refs.refs)
	assert.Empty(t, e.refs.index)
}

// A scoped watch runs while some instance's last evaluation read it, and
// stops when the last of them no longer does.
func TestExternalUsesFollowTheLastEvaluation(t *testing.T) {
	e := testEngine()
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	shared := refByName("spoke-1", "ns", "cfg")
	stopped := 0
	e.refs.scoped[shared.scope()] = &scoped{cancel: func() { stopped++ }, users: map[types.NamespacedName]struct{}{}}
	e.refs.set(a, []resolvedRef{shared})
	e.refs.set(b, []resolvedRef{shared})
	e.refs.set(a, []resolvedRef{shared}) // the same reference read again
	assert.Len(t, e.refs.scoped[shared.scope()].users, 2)

	e.refs.set(a, []resolvedRef{refByName("spoke-1", "ns", "other")})
	assert.Zero(t, stopped, "b still reads it")
	e.refs.forget(b)
	assert.Equal(t, 1, stopped, "no instance reads it any more")
	assert.Empty(t, e.refs.scoped)
}

// A cluster's scoped watches stop when it leaves or is engaged anew (its
// place is replaced), and the instances that read there are returned to
// be requeued: their next evaluation watches its new engagement.
func TestExternalWatchesGoWithTheirReadersAndClusters(t *testing.T) {
	e, spoke1, spoke2 := twoClusters()
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	stopped := map[string]int{}
	for _, ref := range []resolvedRef{refByName("spoke-1", "ns", "cfg"), refByName("spoke-2", "ns", "cfg")} {
		e.refs.scoped[ref.scope()] = &scoped{cancel: func() { stopped[ref.cluster]++ }, users: map[types.NamespacedName]struct{}{}}
	}
	e.refs.set(a, []resolvedRef{refByName("spoke-1", "ns", "cfg")})
	e.refs.set(b, []resolvedRef{refByName("spoke-2", "ns", "cfg")})

	again := NewCluster("spoke-2", nil) // spoke-2 left and came back: a new cache
	assert.NotEqual(t, spoke2, e.places.of(e, again), "a new engagement gets a new place")
	assert.Equal(t, map[string]int{"spoke-2": 1}, stopped, "spoke-2's watch stopped, spoke-1's runs")
	assert.Equal(t, spoke1, e.places.named("spoke-1"))
	assert.Equal(t, []types.NamespacedName{a}, e.refs.dropCluster("spoke-1"))
	assert.Equal(t, map[string]int{"spoke-1": 1, "spoke-2": 1}, stopped)
}
