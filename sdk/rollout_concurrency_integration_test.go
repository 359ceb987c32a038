//go:build integration

package sdk_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// sample is how often the concurrency test looks at the fleet.
const sample = 100 * time.Millisecond

// movingClusters returns the clusters that switched to revision rev (the
// hub serves it there, or its ConfigMap says version) and whose instance
// is not yet ACTIVE as written by that version.
func movingClusters(h *sdk.Hub, graphName string, spokes map[string]client.Client, gvk schema.GroupVersionKind, rev int64, version string) []string {
	served := servedRevisions(h, graphName)
	var out []string
	for _, name := range slices.Sorted(maps.Keys(spokes)) {
		data, _ := configMapData(spokes[name], "app-tide")
		switched := served[name] == rev || data["version"] == version
		done := data["version"] == version && state(spokes[name], gvk, "app") == "ACTIVE"
		if switched && !done {
			out = append(out, name)
		}
	}
	return out
}

// A wave of four with maxConcurrency 1: at no sample (every 100 ms) are
// two of its clusters moving (switched to the new revision and not yet
// healthy) at once. The test holds each moving cluster unhealthy for a
// few samples (its instance is red, the revision needs green) before it
// turns it green; the wave then completes, one cluster after the other.
func TestMaxConcurrencyMovesOneClusterAtATime(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}})
	gvk := webAppGVK.GroupVersion().WithKind("Rill")
	applyRollout(t, fleet.Hub.Config, "rill", map[string]any{
		"graph": "rill",
		"waves": []any{map[string]any{"name": "all", "percent": int64(100), "maxConcurrency": int64(1)}},
	})
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "rill", "Rill", "1", "")))
	for _, c := range spokes {
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"color": "red"}))
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	requireRollout(t, h, "rill", fgv1alpha1.RolloutComplete, allServe(1))

	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "rill", "Rill", "2", "green")))
	var order []string
	seen := map[string]int{} // samples each cluster has been seen moving
	deadline := time.Now().Add(2 * wait)
	samples := time.NewTicker(sample)
	defer samples.Stop()
	for range samples.C {
		require.True(t, time.Now().Before(deadline), "the wave did not complete; moved %v; status %+v", order, rolloutOf(h, "rill"))
		moving := movingClusters(h, "rill", spokes, gvk, 2, "2")
		require.LessOrEqual(t, len(moving), 1, "moving at once: %v", moving)
		st := rolloutOf(h, "rill")
		require.LessOrEqual(t, len(st.Moving), 1, "the status lets one move: %v", st.Moving)
		for _, name := range moving {
			if seen[name] == 0 {
				order = append(order, name)
			}
			seen[name]++
			if seen[name] == 3 { // seen moving long enough: let it be healthy
				setColor(t, spokes[name], gvk, "app", "green")
			}
		}
		if st.TargetRevision == 2 && st.Phase == fgv1alpha1.RolloutComplete {
			break
		}
	}
	assert.Equal(t, []string{"spoke-1", "spoke-2", "spoke-3", "spoke-4"}, order, "each cluster moved, in name order")
	requireRollout(t, h, "rill", fgv1alpha1.RolloutComplete, allServe(2))
	for _, c := range spokes {
		requireVersion(t, c, "app", "2")
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	st := rolloutStatus(t, newClient(t, fleet.Hub.Config), "rill")
	assert.Empty(t, st.Moving)
}

func rolloutOf(h *sdk.Hub, graphName string) sdk.RolloutStatus {
	st, _ := h.Rollout(graphName)
	return st
}
