package spoke

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

func instanceAt(name, uid, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetResourceVersion(rv)
	return u
}

func headAt(name, uid, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
}

// TestALateMetadataWatchStartsWhatTheInstanceWatchHasNotDelivered: a
// metadata-only watch started while the instance watch runs (by the first
// large instance) lists, as initial objects, versions the instance watch
// may not have delivered yet; once the metadata watch has shown a version,
// the instance watch's handler leaves it alone, so the metadata watch must
// start their reconciles itself, and only theirs.
func TestALateMetadataWatchStartsWhatTheInstanceWatchHasNotDelivered(t *testing.T) {
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request]())
	t.Cleanup(queue.ShutDown)
	m := &member{c: &controller{queue: queue}, heads: newInstanceHeads()}
	m.engine = instance.New(instance.Config{Graph: &graph.Graph{Name: "unit"}, Home: instance.NewCluster("", nil),
		Context: context.Background(), Enqueue: m.enqueue, Options: instance.Options{OrphanGrace: -1}})
	m.engine.Instances().Saw(instanceAt("same", "u1", "5"))
	m.engine.Instances().Saw(instanceAt("older", "u2", "5"))

	h := instanceHeadHandler{m: m}
	h.OnAdd(headAt("same", "u1", "5"), true)
	h.OnAdd(headAt("older", "u2", "6"), true)
	h.OnAdd(headAt("unseen", "u3", "7"), true)

	require.Equal(t, 2, queue.Len(), "reconciles started")
	var got []string
	for range 2 {
		req, _ := queue.Get()
		got = append(got, req.Name)
		queue.Done(req)
	}
	assert.ElementsMatch(t, []string{"older", "unseen"}, got)
	assert.True(t, m.heads.shown(instanceAt("older", "u2", "6")),
		"the instance watch's handler leaves version 6 to the metadata watch")
}
