//go:build integration

package sdk_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/providers/secret"
)

// With Options.Targets.AbandonAfter set, the deletion of a hub instance
// whose target spoke is frozen waits, DELETING and naming the cluster,
// for the grace; then it goes on without that spoke: the children on the
// hub and on the healthy spoke are deleted, the one on the frozen spoke
// is left there (labelled, reported in an event), and the instance goes.
func TestHubGraphAbandonsAnUnreachableTargetAfterItsGrace(t *testing.T) {
	t.Parallel()
	const grace = 8 * time.Second
	opts := meshOnly()
	opts.Targets.CallTimeout = 2 * time.Second
	opts.Targets.AbandonAfter = grace
	f, h, _ := startHubGraphFleet(t, opts)
	ctx := context.Background()
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, linkRGD)))
	createWhenServed(t, f.hub, instance(linkGVK, "gone", map[string]any{"egressCluster": "spoke-2"}))
	requireState(t, f.hub, linkGVK, "gone", "ACTIVE")
	f.requireData(t, "spoke-2", "gone-egress", map[string]string{"upstream": "db.default:5432"})

	frozen := f.fleet.Spoke("spoke-2")
	require.NoError(t, frozen.Pause())
	t.Cleanup(func() { _ = frozen.Resume() })
	deleted := time.Now()
	require.NoError(t, f.hub.Delete(ctx, f.link("gone")))

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := f.link("gone")
		require.NotNil(ct, u, "the instance waits for spoke-2")
		s, _, _ := unstructured.NestedString(u.Object, "status", "state")
		assert.Equal(ct, "DELETING", s)
		c := condition(u, "Ready")
		require.NotNil(ct, c)
		assert.Equal(ct, "ClusterUnreachable", c["reason"])
		assert.Contains(ct, c["message"], "spoke-2")
		assert.Contains(ct, c["message"], "abandoned at")
	}, wait, tick)
	_, err := f.configMap("hub", "gone-record")
	assert.True(t, apierrors.IsNotFound(err), "the wave before spoke-2's went: %v", err)
	db, err := f.configMap("spoke-1", "gone-db")
	require.NoError(t, err, "the wave after spoke-2's waits for it")
	assert.Nil(t, db.DeletionTimestamp)

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Nil(ct, f.link("gone"), "the instance goes once the grace is over")
	}, wait+grace, tick)
	took := time.Since(deleted)
	t.Logf("the deletion finished %v after it started (grace %v)", took.Round(time.Millisecond), grace)
	assert.GreaterOrEqual(t, took, grace, "the deletion waited at least the grace")
	_, err = f.configMap("spoke-1", "gone-db")
	assert.True(t, apierrors.IsNotFound(err), "db on the healthy spoke is deleted: %v", err)

	abandoned := f.abandonEvents(t, "gone")
	require.Len(t, abandoned, 1, "one event per abandoned cluster")
	t.Logf("event: %s", abandoned[0])
	assert.Contains(t, abandoned[0], `cluster "spoke-2"`)
	assert.Contains(t, abandoned[0], "fleetgraph.dev/instance-uid=")
	assert.Contains(t, abandoned[0], "ConfigMap default/gone-egress")
	assert.False(t, strings.Contains(strings.ToLower(abandoned[0]), "kubeconfig"), "no credentials in the event")

	// Back, spoke-2 still holds what was abandoned, and nothing deletes it.
	require.NoError(t, frozen.Resume())
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cm, err := f.configMap("spoke-2", "gone-egress")
		require.NoError(ct, err, "the abandoned child is left on spoke-2")
		assert.Nil(ct, cm.DeletionTimestamp)
		assert.Equal(ct, "link", cm.Labels["fleetgraph.dev/graph"])
	}, wait, tick)

	t.Run("a target that left the fleet is abandoned the same way", func(t *testing.T) {
		createWhenServed(t, f.hub, instance(linkGVK, "left", map[string]any{"egressCluster": "spoke-2"}))
		requireState(t, f.hub, linkGVK, "left", "ACTIVE")
		kubeconfig := &corev1.Secret{}
		require.NoError(t, f.hub.Get(ctx, client.ObjectKey{Namespace: secret.DefaultNamespace, Name: "spoke-2"}, kubeconfig))
		require.NoError(t, f.hub.Delete(ctx, kubeconfig))
		deleted := time.Now()
		require.NoError(t, f.hub.Delete(ctx, f.link("left")))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			u := f.link("left")
			require.NotNil(ct, u)
			c := condition(u, "Ready")
			require.NotNil(ct, c)
			assert.Equal(ct, "ClusterUnreachable", c["reason"])
			assert.Contains(ct, c["message"], `"spoke-2"`)
		}, wait, tick)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Nil(ct, f.link("left"))
		}, wait+grace, tick)
		assert.GreaterOrEqual(t, time.Since(deleted), grace)
		_, err := f.configMap("spoke-1", "left-db")
		assert.True(t, apierrors.IsNotFound(err), "db on the healthy spoke is deleted: %v", err)
		cm, err := f.configMap("spoke-2", "left-egress")
		require.NoError(t, err, "what was on the departed spoke is left there")
		assert.Nil(t, cm.DeletionTimestamp)
		for _, msg := range f.abandonEvents(t, "left") {
			assert.Contains(t, msg, `cluster "spoke-2"`)
			assert.Contains(t, msg, "fleetgraph.dev/instance-uid=")
		}
	})
}

// The grace counts from the first time the deletion found the cluster
// unreachable, recorded on the instance: a hub restarted mid-deletion
// keeps that time rather than starting the count again.
func TestHubGraphAbandonGraceSurvivesARestart(t *testing.T) {
	t.Parallel()
	const grace = 15 * time.Second
	opts := meshOnly()
	opts.Targets.CallTimeout = 2 * time.Second
	opts.Targets.AbandonAfter = grace
	f, h, stop := startHubGraphFleet(t, opts)
	ctx := context.Background()
	require.NoError(t, h.RegisterGraph(ctx, rgdFromString(t, linkRGD)))
	createWhenServed(t, f.hub, instance(linkGVK, "kept", map[string]any{"egressCluster": "spoke-2"}))
	requireState(t, f.hub, linkGVK, "kept", "ACTIVE")

	frozen := f.fleet.Spoke("spoke-2")
	require.NoError(t, frozen.Pause())
	t.Cleanup(func() { _ = frozen.Resume() })
	require.NoError(t, f.hub.Delete(ctx, f.link("kept")))
	var since map[string]string
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := f.link("kept")
		require.NotNil(ct, u)
		v := u.GetAnnotations()["fleetgraph.dev/unreachable-since"]
		require.NotEmpty(ct, v)
		since = nil
		require.NoError(ct, json.Unmarshal([]byte(v), &since))
		assert.Contains(ct, since, "spoke-2")
	}, wait, tick)
	stop()

	h2, _ := f.startHub(t, opts)
	require.NoError(t, h2.RegisterGraph(ctx, rgdFromString(t, linkRGD)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Nil(ct, f.link("kept"))
	}, wait+grace, tick)
	msgs := f.abandonEvents(t, "kept")
	require.Len(t, msgs, 1)
	assert.Contains(t, msgs[0], "unreachable since "+since["spoke-2"], "the restarted hub kept the first hub's count")
	_, err := f.configMap("spoke-1", "kept-db")
	assert.True(t, apierrors.IsNotFound(err), "db on the healthy spoke is deleted: %v", err)
}

// abandonEvents waits until the hub has recorded a ChildrenAbandoned event
// for the named instance, and returns the messages of every such event.
// Events are written by the recorder's own goroutine, after the finalizer
// came off: the instance may be gone before its event is stored.
func (f *hubGraphFleet) abandonEvents(t *testing.T, instance string) []string {
	t.Helper()
	var msgs []string
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		events := &corev1.EventList{}
		require.NoError(ct, f.hub.List(context.Background(), events, client.InNamespace("default")))
		msgs = nil
		for _, e := range events.Items {
			if e.Reason == "ChildrenAbandoned" && e.InvolvedObject.Name == instance {
				msgs = append(msgs, e.Message)
			}
		}
		assert.NotEmpty(ct, msgs, "the abandon of %s is reported", instance)
	}, wait, tick)
	return msgs
}
