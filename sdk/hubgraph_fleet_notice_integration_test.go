//go:build integration

package sdk_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/providers/secret"
)

// A hub graph that reads fleet.clusters follows a relabel the provider
// tells of (providers/secret: a kubeconfig Secret relabelled) at once, not
// at its next look at the fleet: with that poll and the instances' resync
// set far beyond the test's deadline, only the notice can explain a
// gateway added in a cluster labelled in, and one pruned from a cluster
// labelled out.
func TestHubGraphFollowsRelabelsAtOnce(t *testing.T) {
	t.Parallel()
	const never = 10 * time.Minute
	opts := meshOnly()
	opts.Targets.FleetPoll = never
	opts.Instances.Resync = never
	f, _, _ := startHubGraphFleet(t, opts, meshRGD)
	createWhenServed(t, f.hub, instance(meshGVK, "m", map[string]any{}))
	gatewaysIn := func(within time.Duration, want ...string) time.Duration {
		t.Helper()
		start := time.Now()
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			var got []string
			for _, c := range []string{"spoke-1", "spoke-2", "spoke-3"} {
				for range f.children(ct, c, "mesh") {
					got = append(got, c)
				}
			}
			assert.ElementsMatch(ct, want, got)
		}, within, tick, "gateways in %v", want)
		return time.Since(start)
	}
	gatewaysIn(wait, "spoke-1", "spoke-2")
	requireState(t, f.hub, meshGVK, "m", "ACTIVE")

	// Well inside the poll: a notice reaches the graph in well under a
	// second; the deadline leaves room for a busy machine.
	const notice = 30 * time.Second
	relabel(t, f.hub, "spoke-3", map[string]string{secret.LabelPrefix + "mesh": "true"})
	t.Logf("labelled in: a gateway in spoke-3 after %v", gatewaysIn(notice, "spoke-1", "spoke-2", "spoke-3").Round(time.Millisecond))
	relabel(t, f.hub, "spoke-1", map[string]string{})
	t.Logf("labelled out: spoke-1's gateway pruned after %v", gatewaysIn(notice, "spoke-2", "spoke-3").Round(time.Millisecond))
	requireState(t, f.hub, meshGVK, "m", "ACTIVE")
}
