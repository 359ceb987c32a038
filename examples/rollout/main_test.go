//go:build integration

package main

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/examples/internal/keep/keeptest"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The demo, run with -keep, shows in one run what its README promises, and
// the kept fleet says so itself, read through the merged kubeconfig's
// contexts (not from the demo's prints): the main wave of revision 2
// waited for an approval that the hub recorded; the held cluster still
// serves revision 1 and its greeting; revision 3 failed on the canary and
// was rolled back to revision 2 by the rollout itself (no spec.rollbackTo),
// the canary's child back to revision 2's text.
func TestRolloutDemoShowsAnApprovalAHoldAndAnAutomaticRollback(t *testing.T) {
	fgtesting.SetupLogs()
	ctx := context.Background()
	var out keeptest.Buffer
	files, stop := keeptest.Run(t, &out, func(ctx context.Context, kept func(fgtesting.KubeconfigFiles)) error {
		return run(ctx, &out, options{keep: true, kept: kept})
	})
	clients := contextClients(t, files)
	hub := clients["hub"]

	revs := revisions(t, hub)
	require.Len(t, revs, 3, "revisions 1, 2 and 3 of the graph")
	first, second, third := revs[0], revs[1], revs[2]

	// The hub writes the status it acted on; wait until the API server
	// has the rolled back one.
	ro := &fgv1alpha1.GraphRollout{}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, hub.Get(ctx, client.ObjectKey{Name: graphName}, ro))
		assert.Equal(ct, fgv1alpha1.RolloutRolledBack, ro.Status.Phase)
		assert.True(ct, settled(ro.Status), "every cluster serves what the rollout wants")
	}, time.Minute, 200*time.Millisecond)
	st := ro.Status
	t.Run("revision 3 failed on the canary and was rolled back by the rollout", func(t *testing.T) {
		assert.Equal(t, fgv1alpha1.RolloutRolledBack, st.Phase, st.Message)
		assert.Equal(t, third, st.TargetRevision)
		assert.Equal(t, second, st.StableRevision)
		assert.Zero(t, ro.Spec.RollbackTo, "nobody asked for the rollback")
		assert.Contains(t, st.RollbackReason, `wave "canary"`)
		assert.Contains(t, st.RollbackReason, "spoke-1")
		assert.Equal(t, second, clusterOf(t, st, "spoke-1").Revision)
		assert.Equal(t, secondText, configMapText(t, clients["spoke-1"]), "the canary's child is revision 2's again")
		requireEvent(t, hub, "WaveFailed", `wave "canary"`)
		requireEvent(t, hub, "RolledBack", "")
	})
	t.Run("the main wave waited for an approval, which the hub recorded", func(t *testing.T) {
		requireEvent(t, hub, "AwaitingApproval", `"main"`)
		requireEvent(t, hub, "Approved", `"main"`)
		assert.Equal(t, second, clusterOf(t, st, "spoke-2").Revision)
		assert.Equal(t, secondText, configMapText(t, clients["spoke-2"]))
	})
	t.Run("the held cluster kept revision 1", func(t *testing.T) {
		held := clusterOf(t, st, heldCluster)
		assert.True(t, held.Held)
		assert.Equal(t, holdReason, held.HoldReason)
		assert.Equal(t, first, held.Revision)
		assert.Equal(t, "hello", configMapText(t, clients[heldCluster]), "greeting.yaml's text")
		requireEvent(t, hub, "ClusterHeld", heldCluster)
	})
	t.Run("the table names waves as the progress lines do", func(t *testing.T) {
		text := out.String()
		assert.Regexp(t, regexp.MustCompile(`wave canary\s+spoke-1=r\d`), text)
		assert.Regexp(t, regexp.MustCompile(`(?m)^spoke-1\s+canary\s+r\d+`), text)
		assert.Regexp(t, regexp.MustCompile(`(?m)^spoke-3\s+main\s+r\d+\s+held at r\d+: change freeze`), text)
		assert.Contains(t, text, "export KUBECONFIG="+files.Merged)
	})
	stop()
}

// contextClients makes a client for each context of the merged
// kubeconfig: the hub and each spoke.
func contextClients(t *testing.T, files fgtesting.KubeconfigFiles) map[string]client.Client {
	t.Helper()
	out := map[string]client.Client{}
	for _, name := range []string{"hub", "spoke-1", "spoke-2", "spoke-3"} {
		rc, err := files.RESTConfig(name)
		require.NoError(t, err)
		c, err := client.New(rc, client.Options{Scheme: fgtesting.NewScheme()})
		require.NoError(t, err)
		out[name] = c
	}
	return out
}

// revisions lists the graph's revision numbers in order.
func revisions(t *testing.T, hub client.Client) []int64 {
	t.Helper()
	list := &fgv1alpha1.GraphRevisionList{}
	require.NoError(t, hub.List(context.Background(), list))
	var out []int64
	for _, r := range list.Items {
		if r.Spec.Snapshot.Name == graphName {
			out = append(out, r.Spec.Revision)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func clusterOf(t *testing.T, st fgv1alpha1.GraphRolloutStatus, name string) fgv1alpha1.RolloutCluster {
	t.Helper()
	for _, c := range st.Clusters {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("cluster %s is not in the rollout's status: %+v", name, st.Clusters)
	return fgv1alpha1.RolloutCluster{}
}

// configMapText is the greeting's text on a spoke, as its ConfigMap says.
func configMapText(t *testing.T, c client.Client) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: graphName}, cm))
	return cm.Data["text"]
}

// requireEvent requires an event with the reason on the GraphRollout,
// whose note contains note (events are written in the background).
func requireEvent(t *testing.T, hub client.Client, reason, note string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		events := &eventsv1.EventList{}
		require.NoError(ct, hub.List(context.Background(), events))
		var seen []string
		for _, e := range events.Items {
			if e.Regarding.Name != graphName {
				continue
			}
			if e.Reason == reason && strings.Contains(e.Note, note) {
				return
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		assert.Fail(ct, "no such event", "no event %s saying %q on GraphRollout %s; events:\n%s", reason, note, graphName, strings.Join(seen, "\n"))
	}, time.Minute, 200*time.Millisecond)
}
