package hubgraph

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

func byName(cluster, ns, name, rv string) extRef {
	r := extRef{cluster: cluster, gvk: cmGVK, namespace: ns, name: name}
	if rv != "" {
		r.sawObject(keyOf(ns, name), rv)
	}
	return r
}

func bySelector(t *testing.T, cluster, ns, sel string, seen map[string]string) extRef {
	s, err := labels.Parse(sel)
	require.NoError(t, err)
	r := extRef{cluster: cluster, gvk: cmGVK, namespace: ns, selector: s}
	for name, rv := range seen {
		r.sawObject(keyOf(ns, name), rv)
	}
	return r
}

func view(ns, name, rv string, l map[string]string) *objectView {
	return &objectView{namespace: ns, name: name, rv: rv, labels: l}
}

// An event on an external object requeues the instances that read it,
// in that cluster, unless it shows the object as they read it (the
// informer's first list, or the version the live read returned).
func TestExternalReadersByName(t *testing.T) {
	x := newExternals(nil, nil)
	a, b := keyOf("team-a", "a"), keyOf("team-b", "b")
	x.set(a, []extRef{byName("spoke-1", "team-a", "cfg", "10")})
	x.set(b, []extRef{byName("spoke-2", "team-a", "cfg", "")}) // read there, found nothing

	assert.Empty(t, x.readers("spoke-1", cmGVK, nil, view("team-a", "cfg", "10", nil)), "the version a read is no news")
	assert.Equal(t, []types.NamespacedName{a}, x.readers("spoke-1", cmGVK, view("team-a", "cfg", "10", nil), view("team-a", "cfg", "11", nil)))
	assert.Empty(t, x.readers("spoke-1", cmGVK, nil, view("team-a", "other", "12", nil)), "another name")
	assert.Empty(t, x.readers("spoke-1", cmGVK, nil, view("team-b", "cfg", "12", nil)), "another namespace")
	assert.Empty(t, x.readers("spoke-3", cmGVK, nil, view("team-a", "cfg", "12", nil)), "another cluster")
	assert.Empty(t, x.readers("spoke-1", schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, nil, view("team-a", "cfg", "12", nil)), "another kind")
	assert.Equal(t, []types.NamespacedName{a}, x.readers("spoke-1", cmGVK, view("team-a", "cfg", "10", nil), nil), "its deletion")

	assert.Equal(t, []types.NamespacedName{b}, x.readers("spoke-2", cmGVK, nil, view("team-a", "cfg", "3", nil)), "the object b waits for appears")
	assert.Empty(t, x.readers("spoke-2", cmGVK, view("team-a", "cfg", "3", nil), nil), "b never saw it: its deletion is no news")
}

// A reference by selector is requeued by an object that joins the
// selection, changes in it or leaves it (by its labels or its deletion).
func TestExternalReadersBySelector(t *testing.T) {
	x := newExternals(nil, nil)
	a := keyOf("team-a", "a")
	x.set(a, []extRef{bySelector(t, "spoke-1", "team-a", "app=web", map[string]string{"one": "5"})})
	web := map[string]string{"app": "web"}

	assert.Empty(t, x.readers("spoke-1", cmGVK, nil, view("team-a", "one", "5", web)), "as read")
	assert.Equal(t, []types.NamespacedName{a}, x.readers("spoke-1", cmGVK, nil, view("team-a", "two", "6", web)), "joins")
	assert.Equal(t, []types.NamespacedName{a}, x.readers("spoke-1", cmGVK, view("team-a", "one", "5", web), view("team-a", "one", "7", web)), "changes")
	assert.Equal(t, []types.NamespacedName{a}, x.readers("spoke-1", cmGVK, view("team-a", "one", "5", web), view("team-a", "one", "7", nil)), "leaves by its labels")
	assert.Equal(t, []types.NamespacedName{a}, x.readers("spoke-1", cmGVK, view("team-a", "one", "5", web), nil), "deleted")
	assert.Empty(t, x.readers("spoke-1", cmGVK, view("team-a", "three", "5", nil), view("team-a", "three", "8", nil)), "never selected")
	assert.Empty(t, x.readers("spoke-1", cmGVK, nil, view("team-b", "two", "6", web)), "another namespace")
}

// A selector reference remembers at most maxSeen versions; past that,
// every event on a selected object requeues, and nothing more is kept.
func TestExternalSeenIsBounded(t *testing.T) {
	seen := map[string]string{}
	for i := range 3 * maxSeen {
		seen[fmt.Sprint("cm-", i)] = "1"
	}
	r := bySelector(t, "spoke-1", "ns", "app=web", seen)
	assert.Len(t, r.seen, maxSeen)
	assert.True(t, r.partial)
	x := newExternals(nil, nil)
	x.set(keyOf("ns", "a"), []extRef{r})
	assert.Len(t, x.readers("spoke-1", cmGVK, nil, view("ns", "cm-0", "1", map[string]string{"app": "web"})), 1)
}

// A (cluster, kind) is in use while some instance's last evaluation read
// it; note (during an evaluation) and set (after it) keep the count.
func TestExternalUsesFollowTheLastEvaluation(t *testing.T) {
	x := newExternals(nil, nil)
	a, b := keyOf("ns", "a"), keyOf("ns", "b")
	spoke1 := watchKey{cluster: "spoke-1", gvk: cmGVK}
	spoke2 := watchKey{cluster: "spoke-2", gvk: cmGVK}

	x.note(a, byName("spoke-1", "ns", "cfg", "1"))
	x.note(a, byName("spoke-1", "ns", "cfg", "2")) // the same reference read again
	assert.Equal(t, 1, x.uses[spoke1])
	x.set(a, []extRef{byName("spoke-1", "ns", "cfg", "2")})
	x.set(b, []extRef{byName("spoke-1", "ns", "other", "1"), byName("spoke-2", "ns", "cfg", "1")})
	assert.Equal(t, 2, x.uses[spoke1])
	assert.Equal(t, 1, x.uses[spoke2])

	x.set(b, []extRef{byName("spoke-1", "ns", "other", "1")}) // b no longer reads spoke-2
	assert.NotContains(t, x.uses, spoke2)
	assert.Empty(t, x.readers("spoke-2", cmGVK, nil, view("ns", "cfg", "9", nil)))

	x.forget(a)
	x.forget(b)
	assert.Empty(t, x.uses)
	assert.Empty(t, x.index)
	assert.Empty(t, x.refs)
}

// fakeInformer counts the handlers removed from it.
type fakeInformer struct {
	cache.Informer
	removed int
}

func (f *fakeInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	f.removed++
	return nil
}

// engagedClusters engages the clusters of its map (each told apart by
// its address).
type engagedClusters struct {
	Clusters
	engaged map[string]cluster.Cluster
}

func (f engagedClusters) Cluster(_ context.Context, name string) (cluster.Cluster, error) {
	if cl := f.engaged[name]; cl != nil {
		return cl, nil
	}
	return nil, fmt.Errorf("cluster %q is not engaged", name)
}

// A watch's handler is removed when no instance reads that (cluster,
// kind) any more, and when its cluster leaves or is engaged anew: then
// the instances that read there are requeued.
func TestExternalWatchesGoWithTheirReadersAndClusters(t *testing.T) {
	spoke1, spoke2, spoke2Again := &fakeCluster{}, &fakeCluster{}, &fakeCluster{}
	fc := engagedClusters{engaged: map[string]cluster.Cluster{"spoke-1": spoke1, "spoke-2": spoke2}}
	x := newExternals(fc, nil)
	a, b := keyOf("ns", "a"), keyOf("ns", "b")
	x.set(a, []extRef{byName("spoke-1", "ns", "cfg", "1"), byName("", "ns", "cfg", "1")})
	x.set(b, []extRef{byName("spoke-2", "ns", "cfg", "1")})
	infs := map[watchKey]*fakeInformer{}
	for k, cl := range map[watchKey]cluster.Cluster{
		{cluster: "spoke-1", gvk: cmGVK}: spoke1, {cluster: "spoke-2", gvk: cmGVK}: spoke2, {cluster: "", gvk: cmGVK}: &fakeCluster{},
	} {
		infs[k] = &fakeInformer{}
		x.watches[k] = &extWatch{cl: cl, informer: infs[k]}
	}

	assert.Empty(t, x.departed(context.Background()), "every cluster is engaged as it was")

	x.set(a, []extRef{byName("", "ns", "cfg", "1")}) // a reads spoke-1 no more
	assert.Equal(t, 1, infs[watchKey{cluster: "spoke-1", gvk: cmGVK}].removed)
	assert.NotContains(t, x.watches, watchKey{cluster: "spoke-1", gvk: cmGVK})

	fc.engaged["spoke-2"] = spoke2Again // left and came back: a new cache
	assert.Equal(t, []types.NamespacedName{b}, x.departed(context.Background()))
	assert.Equal(t, 1, infs[watchKey{cluster: "spoke-2", gvk: cmGVK}].removed)
	assert.NotContains(t, x.watches, watchKey{cluster: "spoke-2", gvk: cmGVK})

	delete(fc.engaged, "spoke-2")
	assert.Empty(t, x.departed(context.Background()), "nothing is watched there any more")
	assert.Contains(t, x.watches, watchKey{cluster: "", gvk: cmGVK}, "the hub's own never leaves")
	assert.Equal(t, 0, infs[watchKey{cluster: "", gvk: cmGVK}].removed)
}
