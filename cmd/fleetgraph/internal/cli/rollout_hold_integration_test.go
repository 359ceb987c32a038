//go:build integration

package cli_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/hold"
)

// holdAndRelease pins spoke-2 by name and both spokes by a selector, and
// releases them, from the command line: the hub records each pin, rollout
// status shows it, and a release that would not change what is held is
// refused with a message that says why. It runs on the GraphRollout
// steerRollout left.
func holdAndRelease(t *testing.T) {
	r := hub(t, "rollout", "hold", "webapp", "--cluster", "spoke-2", "--reason", "customer freeze")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp held spoke-2\n", r.out, r.String())
	r = hub(t, "rollout", "hold", "webapp", "--cluster", "spoke-2", "--reason", "twice is once")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp already held spoke-2\n", r.out, r.String())
	ro := readRollout(t)
	assert.Equal(t, []fgv1alpha1.Hold{{Clusters: []string{"spoke-2"}, Reason: "customer freeze"}}, ro.Spec.Holds)
	var managers []string
	for _, m := range ro.ManagedFields {
		managers = append(managers, m.Manager)
	}
	assert.Contains(t, managers, hold.FieldManager, "written as Hub.Hold writes")
	held := requireHeld(t, "spoke-2")
	r = hub(t, "rollout", "status", "webapp")
	assert.Contains(t, r.out, "\n  hold: spoke-2: customer freeze (spec.holds)\n", r.String())
	assert.Contains(t, r.out, "held: spoke-2, wave \"rest\", at revision "+revisionOf(held["spoke-2"])+": customer freeze")

	r = hub(t, "rollout", "release", "webapp", "--cluster", "spoke-1")
	assert.Equal(t, cli.ExitFailed, r.code, r.String())
	assert.Equal(t, "error: cluster \"spoke-1\" in GraphRollout webapp: no hold of the rollout takes the cluster\n", r.err)

	// The hub's status.clusters is the fleet a rollout knows: a cluster it
	// does not list is refused, and nothing changes.
	r = hub(t, "rollout", "hold", "webapp", "--cluster", "spoke-1,spoke-9", "--reason", "typo")
	assert.Equal(t, cli.ExitFailed, r.code, r.String())
	assert.Equal(t, "error: cluster \"spoke-9\" in GraphRollout webapp: the rollout places no such cluster (it places spoke-1, spoke-2)\n", r.err)
	r = hub(t, "rollout", "release", "webapp", "--cluster", "spoke-9")
	assert.Equal(t, cli.ExitFailed, r.code, r.String())
	assert.Equal(t, "error: cluster \"spoke-9\" in GraphRollout webapp: the rollout places no such cluster (it places spoke-1, spoke-2)\n", r.err)
	assert.Equal(t, []fgv1alpha1.Hold{{Clusters: []string{"spoke-2"}, Reason: "customer freeze"}}, readRollout(t).Spec.Holds, "a refused hold changes nothing")
	r = fleetgraph(t, "__complete", "rollout", "hold", "webapp", "--kubeconfig", hubConfig, "--cluster", "")
	assert.Equal(t, "spoke-1\nspoke-2\n:4\n", r.out, "--cluster completes the placed clusters: %s", r)
	r = hub(t, "rollout", "release", "webapp", "--cluster", "spoke-2")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp released spoke-2\n", r.out, r.String())
	assert.Empty(t, readRollout(t).Spec.Holds)
	requireHeld(t)

	r = hub(t, "rollout", "hold", "webapp", "-l", "!nosuch", "--reason", "frozen by label")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp held clusters matching \"!nosuch\"\n", r.out, r.String())
	requireHeld(t, "spoke-1", "spoke-2")
	r = hub(t, "rollout", "status", "webapp")
	assert.Contains(t, r.out, "\n  hold: clusters matching \"!nosuch\": frozen by label (spec.holds)\n", r.String())
	r = hub(t, "rollout", "release", "webapp", "--cluster", "spoke-1")
	assert.Equal(t, cli.ExitFailed, r.code, r.String())
	assert.Equal(t, "error: cluster \"spoke-1\" in GraphRollout webapp: a hold takes the cluster by label selector"+
		" (release it with --selector, or edit that hold in spec.holds)\n", r.err)
	r = hub(t, "rollout", "release", "webapp", "--selector", "nosuch=x")
	assert.Equal(t, cli.ExitFailed, r.code, r.String())
	assert.Equal(t, "error: selector \"nosuch=x\" in GraphRollout webapp: no hold of the rollout takes the cluster\n", r.err)
	assert.Len(t, readRollout(t).Spec.Holds, 1, "a refused release changes nothing")
	r = hub(t, "rollout", "release", "webapp", "--selector", "!nosuch")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp released clusters matching \"!nosuch\"\n", r.out, r.String())
	assert.Empty(t, readRollout(t).Spec.Holds)
	requireHeld(t)

	r = hub(t, "rollout", "hold", "webapp", "--reason", "none named")
	assert.Equal(t, cli.ExitError, r.code, r.String())
	assert.Contains(t, r.err, "at least one of the flags in the group [cluster selector] is required")
	r = hub(t, "rollout", "hold", "webapp", "--cluster", "spoke-1", "--selector", "a=b", "--reason", "both")
	assert.Equal(t, cli.ExitError, r.code, r.String())
	assert.Contains(t, r.err, "[cluster selector] were all set")
	r = hub(t, "rollout", "hold", "webapp", "--selector", "a in (", "--reason", "bad")
	assert.Equal(t, cli.ExitError, r.code, r.String())
	assert.Contains(t, r.err, `--selector "a in ("`)
	r = hub(t, "rollout", "release", "nosuch", "--cluster", "spoke-1")
	assert.Equal(t, cli.ExitFailed, r.code, r.String())
	assert.Contains(t, r.err, `no GraphRollout is named "nosuch" or rolls out a graph of that name`)
}

// requireHeld waits until the hub's status holds exactly the named
// clusters, and returns the revision each is pinned at.
func requireHeld(t *testing.T, clusters ...string) map[string]int64 {
	t.Helper()
	var pins map[string]int64
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		pins = map[string]int64{}
		var held []string
		for _, c := range readRollout(ct).Status.Clusters {
			if c.Held {
				held = append(held, c.Name)
				pins[c.Name] = c.Desired
			}
		}
		assert.ElementsMatch(ct, clusters, held)
	}, wait, tick, "the hub records %v as held", clusters)
	return pins
}

func revisionOf(r int64) string { return strconv.FormatInt(r, 10) }
