//go:build integration

package sdk_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// With Options.Targets.AbandonAfter set, the deletion of a hub instance
// whose target spoke is frozen waits, DELETING and naming the cluster,
// for the grace; then it goes on without that spoke: the children on the
// hub and on the healthy spoke are deleted, the one on the frozen spoke
// is left there (labelled, reported in an event), and the instance goes.
// When the spoke answers again, what was left there is collected as the
// orphan it is (Options.OrphanGrace).
func TestHubGraphAbandonsAnUnreachableTargetAfterItsGrace(t *testing.T) {
	t.Parallel()
	const grace = 8 * time.Second
	f, _, _ := startHubGraphFleet(t, abandoning(grace), linkRGD)
	ctx := context.Background()
	f.activeLink(t, "gone", "spoke-2")
	f.requireData(t, "spoke-2", "gone-egress", map[string]string{"upstream": "db.default:5432"})

	frozen := f.freeze(t, "spoke-2")
	deleted := time.Now()
	require.NoError(t, f.hub.Delete(ctx, f.link("gone")))

	requireSays(t, f.hub, linkGVK, "gone", instanceSays{
		State: "DELETING", Condition: "Ready", Reason: "ClusterUnreachable",
		Message: []string{"spoke-2", "abandoned at"},
	}, "the instance waits for spoke-2")
	f.assertNoConfigMap(t, "hub", "gone-record", "the wave before spoke-2's went")
	db, err := f.configMap("spoke-1", "gone-db")
	require.NoError(t, err, "the wave after spoke-2's waits for it")
	assert.Nil(t, db.DeletionTimestamp)

	f.requireLinkGone(t, "gone", wait+grace, "the instance goes once the grace is over")
	took := time.Since(deleted)
	t.Logf("the deletion finished %v after it started (grace %v)", took.Round(time.Millisecond), grace)
	assert.GreaterOrEqual(t, took, grace, "the deletion waited at least the grace")
	f.assertNoConfigMap(t, "spoke-1", "gone-db", "db on the healthy spoke is deleted")

	abandoned := f.abandonEvents(t, "gone")
	require.Len(t, abandoned, 1, "one event per abandoned cluster")
	t.Logf("event: %s", abandoned[0])
	assert.Contains(t, abandoned[0], `cluster "spoke-2"`)
	assert.Contains(t, abandoned[0], "fleetgraph.dev/instance-uid=")
	assert.Contains(t, abandoned[0], "ConfigMap default/gone-egress")
	assert.False(t, strings.Contains(strings.ToLower(abandoned[0]), "kubeconfig"), "no credentials in the event")

	// Abandoned, the child stays on spoke-2 while it does not answer; once
	// it answers again, the child of an instance that is gone is collected
	// as an orphan, as on any cluster.
	cm, err := f.configMap("hub", "gone-record")
	require.True(t, apierrors.IsNotFound(err), "%v %v", cm, err)
	require.NoError(t, frozen.Resume())
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		f.assertNoConfigMap(ct, "spoke-2", "gone-egress", "the abandoned child is collected once spoke-2 answers")
	}, wait, tick)

	t.Run("a target that left the fleet is abandoned the same way", func(t *testing.T) {
		f.activeLink(t, "left", "spoke-2")
		f.removeKubeconfig(t, "spoke-2")
		deleted := time.Now()
		require.NoError(t, f.hub.Delete(ctx, f.link("left")))
		requireSays(t, f.hub, linkGVK, "left", instanceSays{Condition: "Ready", Reason: "ClusterUnreachable", Message: []string{`"spoke-2"`}})
		f.requireLinkGone(t, "left", wait+grace)
		assert.GreaterOrEqual(t, time.Since(deleted), grace)
		f.assertNoConfigMap(t, "spoke-1", "left-db", "db on the healthy spoke is deleted")
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
	opts := abandoning(grace)
	f, _, stop := startHubGraphFleet(t, opts, linkRGD)
	ctx := context.Background()
	f.activeLink(t, "kept", "spoke-2")

	f.freeze(t, "spoke-2")
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
	registerGraphs(t, h2, linkRGD)
	f.requireLinkGone(t, "kept", wait+grace)
	msgs := f.abandonEvents(t, "kept")
	require.Len(t, msgs, 1)
	assert.Contains(t, msgs[0], "unreachable since "+since["spoke-2"], "the restarted hub kept the first hub's count")
	f.assertNoConfigMap(t, "spoke-1", "kept-db", "db on the healthy spoke is deleted")
}

// abandoning are meshOnly's options with calls to a cluster timing out
// after 2 s, the children left on an unreachable target after grace, and
// orphans collected 2 s after their instance went.
func abandoning(grace time.Duration) sdk.Options {
	opts := meshOnly()
	opts.Targets.CallTimeout = 2 * time.Second
	opts.Targets.AbandonAfter = grace
	opts.OrphanGrace = 2 * time.Second
	return opts
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

// A hub instance whose children live on a spoke that hangs says it is
// being deleted from the moment its deletion starts: DELETING and
// Ready=False before any call to the hung spoke has had time to fail
// (each may take Targets.CallTimeout, here a minute), never ACTIVE over a
// deletion under way.
func TestHubGraphDeletionSaysDeletingAtOnceWhileATargetHangs(t *testing.T) {
	t.Parallel()
	opts := meshOnly()
	opts.Targets.CallTimeout = time.Minute
	f, _, _ := startHubGraphFleet(t, opts, linkRGD)
	ctx := context.Background()
	f.activeLink(t, "hung", "spoke-2")
	f.requireData(t, "spoke-2", "hung-egress", map[string]string{"upstream": "db.default:5432"})

	f.freeze(t, "spoke-2")
	deleted := time.Now()
	require.NoError(t, f.hub.Delete(ctx, f.link("hung")))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := f.link("hung")
		require.NotNil(ct, u)
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		assert.Equal(ct, "DELETING", state)
		ready := condition(u, "Ready")
		require.NotNil(ct, ready)
		assert.Equal(ct, "False", ready["status"])
	}, opts.Targets.CallTimeout/2, tick, "DELETING well before a call to the hung spoke could time out")
	t.Logf("DELETING %v after the deletion started", time.Since(deleted).Round(time.Millisecond))
}

// The instance's owner can write fleetgraph.dev/unreachable-since, so the
// hub never takes it on trust: a cluster is abandoned only when it did not
// answer in the very pass that abandons it, and the count never starts
// before the deletion did. A forged date in 2000 on an instance whose
// spokes all answer changes nothing: its children everywhere are deleted,
// none is abandoned. The same forgery while a spoke is frozen does not
// shorten the grace either.
func TestHubGraphForgedUnreachableSinceDoesNotAbandon(t *testing.T) {
	t.Parallel()
	const grace = 8 * time.Second
	f, _, _ := startHubGraphFleet(t, abandoning(grace), linkRGD)
	ctx := context.Background()
	forged := `{"spoke-1":"2000-01-01T00:00:00Z","spoke-2":"2000-01-01T00:00:00Z"}`
	forge := func(t *testing.T, name string) {
		t.Helper()
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			u := f.link(name)
			require.NotNil(ct, u)
			ann := u.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann["fleetgraph.dev/unreachable-since"] = forged
			u.SetAnnotations(ann)
			require.NoError(ct, f.hub.Update(ctx, u))
		}, wait, tick)
	}

	t.Run("every spoke answers: nothing is abandoned", func(t *testing.T) {
		f.activeLink(t, "forged", "spoke-2")
		f.requireData(t, "spoke-2", "forged-egress", map[string]string{"upstream": "db.default:5432"})
		forge(t, "forged")
		require.NoError(t, f.hub.Delete(ctx, f.link("forged")))
		f.requireLinkGone(t, "forged", wait)
		f.assertNoConfigMap(t, "spoke-2", "forged-egress", "the child on the reachable spoke is deleted, not abandoned")
		f.assertNoConfigMap(t, "spoke-1", "forged-db", "the child on the other reachable spoke is deleted")
		events := &corev1.EventList{}
		require.NoError(t, f.hub.List(ctx, events, client.InNamespace("default")))
		for _, e := range events.Items {
			assert.False(t, e.Reason == "ChildrenAbandoned" && e.InvolvedObject.Name == "forged", "abandoned: %s", e.Message)
		}
	})

	t.Run("a frozen spoke still gets its whole grace", func(t *testing.T) {
		f.activeLink(t, "early", "spoke-2")
		forge(t, "early")
		frozen := f.freeze(t, "spoke-2")
		defer func() { require.NoError(t, frozen.Resume()) }()
		deleted := time.Now()
		require.NoError(t, f.hub.Delete(ctx, f.link("early")))
		f.requireLinkGone(t, "early", wait+grace)
		took := time.Since(deleted)
		t.Logf("the deletion finished %v after it started (grace %v)", took.Round(time.Millisecond), grace)
		assert.GreaterOrEqual(t, took, grace, "the forged date did not shorten the grace")
		msgs := f.abandonEvents(t, "early")
		require.Len(t, msgs, 1)
		assert.NotContains(t, msgs[0], "2000-01-01", "the event tells the hub's own count")
	})
}
