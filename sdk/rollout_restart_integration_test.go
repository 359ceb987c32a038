//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// failingCanaryDeadline is the progress deadline of a canary wave in which
// one cluster fails: long enough for the other to become Ready on a loaded
// machine (4 s failed both in CI at load 45, failing the wave past its
// budget), short enough that the failing one is judged soon.
const failingCanaryDeadline = 20

// restartWaves: a canary wave of two allowing one failure, then a main
// wave that needs approval and moves one cluster at a time.
func restartWaves(deadlineSeconds int64) map[string]any {
	return map[string]any{
		"graph":                   "brook",
		"progressDeadlineSeconds": deadlineSeconds,
		"waves": []any{
			map[string]any{"name": "canary", "clusterSelector": map[string]any{"matchLabels": map[string]any{"ring": "canary"}}, "maxFailures": int64(1)},
			map[string]any{"name": "main", "percent": int64(100), "approval": fgv1alpha1.ApprovalRequired, "maxConcurrency": int64(1)},
		},
	}
}

// requireHeld waits until the status on the API server shows want and
// the hub serves revs, both at once, then watches for holdWindow that
// they stay so. Both at once: the step that records a cluster as failed
// writes the status before the runtime takes that cluster back to its
// stable revision, so for a moment the status already says the cluster
// failed while it still serves the revision it failed (true then, and
// not a move).
func requireHeld(t *testing.T, h *sdk.Hub, hubClient client.Client, revs map[string]int64, want func(fgv1alpha1.GraphRolloutStatus) bool) {
	t.Helper()
	var mu sync.Mutex // the conditions run in goroutines of their own
	var st fgv1alpha1.GraphRolloutStatus
	var served map[string]int64
	held := func() bool {
		now, serving := rolloutStatus(t, hubClient, "brook"), servedRevisions(h, "brook")
		mu.Lock()
		st, served = now, serving
		mu.Unlock()
		return now.Phase == fgv1alpha1.RolloutProgressing && want(now) && assert.ObjectsAreEqual(revs, serving)
	}
	seen := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("serving %v (want %v), status %+v", served, revs, st)
	}
	if !assert.Eventually(t, held, wait, tick, "the rollout never held") {
		t.Fatalf("last seen: %s", seen())
	}
	if !assert.Never(t, func() bool { return !held() }, holdWindow, tick, "the rollout moved") {
		t.Fatalf("what moved: %s", seen())
	}
}

// sampleServed samples, every 100 ms until the returned func is called,
// the revision h serves the named cluster (as its rollout status shows
// it), and that func returns the revisions seen there, in order, without
// repeats.
func sampleServed(h *sdk.Hub, graphName, cluster string) func() []int64 {
	done, out := make(chan struct{}), make(chan []int64)
	go func() {
		var seen []int64
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if rev, ok := servedRevisions(h, graphName)[cluster]; ok && (len(seen) == 0 || seen[len(seen)-1] != rev) {
				seen = append(seen, rev)
			}
			select {
			case <-done:
				out <- seen
				return
			case <-t.C:
			}
		}
	}()
	return func() []int64 { close(done); return <-out }
}

// failedOnly reports whether st lists exactly name as failed, on revision
// rev.
func failedOnly(st fgv1alpha1.GraphRolloutStatus, name string, rev int64) bool {
	return len(st.Failed) == 1 && st.Failed[0].Name == name && st.Failed[0].Revision == rev
}

// A hub restarted mid-rollout resumes exactly where the status says: twice
// restarted, the cluster that failed the canary wave (within its budget)
// stays failed and on the stable revision, the main wave keeps waiting for
// approval, and once approved, the one cluster moving at the second
// restart keeps the new revision while the others wait their turn.
func TestARestartedHubKeepsFailuresApprovalsAndMoves(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 5) // its own: the rollout controller reads every GraphRollout on its hub cluster
	canary, main := map[string]string{"ring": "canary"}, map[string]string{"ring": "main"}
	labels := map[string]map[string]string{"spoke-1": canary, "spoke-2": canary, "spoke-3": main, "spoke-4": main, "spoke-5": main}
	spokes := clientsOf(t, fleet)
	refuseVersion(t, spokes["spoke-2"], "2")
	opts := sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}}
	h, stop := startStoppableHub(t, fleet.Hub.Config, newLabelledProvider(t, fleet, labels), opts)
	gvk := webAppGVK.GroupVersion().WithKind("Brook")
	applyRollout(t, fleet.Hub.Config, "brook", restartWaves(failingCanaryDeadline))
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "brook", "Brook", "1", "")))
	for name, c := range spokes {
		color := "red" // the main wave's instances are not Ready under revision 2 until the test says so
		if labels[name]["ring"] == "canary" {
			color = "green"
		}
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"color": color}))
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	requireRollout(t, h, "brook", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 1, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1, "spoke-5": 1})
	hubClient := newClient(t, fleet.Hub.Config)

	rev2 := tideRGD(t, "brook", "Brook", "2", "green")
	require.NoError(t, h.RegisterGraph(context.Background(), rev2))
	waiting := map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 1, "spoke-4": 1, "spoke-5": 1}
	failedAndAwaiting := func(st fgv1alpha1.GraphRolloutStatus) bool {
		return failedOnly(st, "spoke-2", 1) && st.AwaitingApproval == "main" && len(st.Moving) == 0
	}
	requireHeld(t, h, hubClient, waiting, failedAndAwaiting)

	// First restart: the failure and the wait hold.
	stop()
	h2, stop2 := startStoppableHub(t, fleet.Hub.Config, newLabelledProvider(t, fleet, labels), opts)
	spoke2 := sampleServed(h2, "brook", "spoke-2") // from the restarted hub's first look
	require.NoError(t, h2.RegisterGraph(context.Background(), rev2))
	requireHeld(t, h2, hubClient, waiting, failedAndAwaiting)
	requireVersion(t, spokes["spoke-2"], "app", "1")
	assert.NotContains(t, spoke2(), int64(2), "the restarted hub served the failed canary the revision it failed")

	// Approved, with time for a restart while spoke-3 moves.
	applyRollout(t, fleet.Hub.Config, "brook", restartWaves(120))
	require.NoError(t, h2.Approve(context.Background(), "brook", "main"))
	moving := map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 2, "spoke-4": 1, "spoke-5": 1}
	spoke3Moves := func(st fgv1alpha1.GraphRolloutStatus) bool {
		return failedOnly(st, "spoke-2", 1) && st.AwaitingApproval == "" && len(st.Moving) == 1 && st.Moving[0].Name == "spoke-3"
	}
	requireHeld(t, h2, hubClient, moving, spoke3Moves)

	// Second restart: spoke-3 keeps revision 2, the others wait their turn.
	stop2()
	h3, _ := startStoppableHub(t, fleet.Hub.Config, newLabelledProvider(t, fleet, labels), opts)
	spoke4 := sampleServed(h3, "brook", "spoke-4") // the main wave must not pass on the clusters engaged first
	require.NoError(t, h3.RegisterGraph(context.Background(), rev2))
	requireHeld(t, h3, hubClient, moving, spoke3Moves)
	assert.NotContains(t, spoke4(), int64(2), "spoke-4 took revision 2 before its turn")

	for _, name := range []string{"spoke-3", "spoke-4", "spoke-5"} {
		setColor(t, spokes[name], gvk, "app", "green")
	}
	done := map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 2, "spoke-4": 2, "spoke-5": 2}
	requireRollout(t, h3, "brook", fgv1alpha1.RolloutComplete, done)
	st := rolloutStatus(t, hubClient, "brook")
	require.Len(t, st.Failed, 1)
	assert.Equal(t, "spoke-2", st.Failed[0].Name)
	requireVersion(t, spokes["spoke-2"], "app", "1")
	requireState(t, spokes["spoke-2"], gvk, "app", "ACTIVE")
	requireVersion(t, spokes["spoke-5"], "app", "2")
}
