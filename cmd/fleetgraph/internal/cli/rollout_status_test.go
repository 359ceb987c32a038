package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// goldenFile compares got with testdata/<name>.golden, or writes it when
// the package's tests run with -update (helpers_test.go defines it).
func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run the test with -update")
	require.Equal(t, string(want), got, "output differs from %s (rerun with -update if the change is intended)", path)
}

func rolloutFixture(t *testing.T, name string) *fgv1alpha1.GraphRollout {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	require.NoError(t, err)
	ro := &fgv1alpha1.GraphRollout{}
	require.NoError(t, yaml.UnmarshalStrict(raw, ro))
	return ro
}

// A canary of one cluster whose cluster failed, with maxFailures 1: a wave
// needs a healthy cluster, so the hub fails the rollout there. rollout
// status names the cluster, the revision it failed and why, per wave,
// shows that the budget covered the wave, and never calls the wave
// healthy.
func TestRolloutStatusOfACanaryWhoseOnlyClusterFailed(t *testing.T) {
	ro := rolloutFixture(t, "rollout-canary-failed")
	out, err := renderRollout(ro, "")
	require.NoError(t, err)
	goldenFile(t, "rollout-status-canary-failed", out)
	assert.Contains(t, out, "spoke-1")
	assert.NotContains(t, out, "healthy,")
	assert.Regexp(t, `(?m)^canary\s+failed\s+1\s+1\s+-\s+-$`, out)
}

// A canary of two clusters, one of which failed within the budget: the
// failed cluster is named in its wave with the revision it went back to
// and why, and the held cluster of the main wave with its pin.
func TestRolloutStatusNamesFailedAndHeldClustersPerWave(t *testing.T) {
	ro := rolloutFixture(t, "rollout-failed-within-budget")
	out, err := renderRollout(ro, "")
	require.NoError(t, err)
	goldenFile(t, "rollout-status-failed-within-budget", out)
	assert.Regexp(t, `(?m)^canary\s+done\s+2\s+1\s+spoke-2\s+-$`, out)
	assert.Contains(t, out, `failed: spoke-2, wave "canary": revision 3 failed there, serves revision 2: 0 of 1 instances Ready, 100% needed`)
	assert.Contains(t, out, `held: spoke-4, wave "main", at revision 2: customer freeze`)
}

// A wave of more clusters than the hub lists in status.holdingBack: rollout
// status names the listed ones, says how many more wait, and the table
// gives each of them its why.
func TestRolloutStatusCountsTheClustersPastHoldingBacksBound(t *testing.T) {
	ro := &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{Graph: "g", Waves: []fgv1alpha1.Wave{{Name: "all", Percent: 100}}}}
	ro.Name = "g"
	st := &ro.Status
	st.Phase, st.TargetRevision, st.StableRevision, st.WaveName = fgv1alpha1.RolloutProgressing, 2, 1, "all"
	const n = fgv1alpha1.MaxHoldingBackListed + 50
	for i := range n {
		c := fgv1alpha1.RolloutCluster{Name: fmt.Sprintf("spoke-%03d", i), Revision: 1, Desired: 2, Message: "serves revision 1"}
		st.Clusters = append(st.Clusters, c)
		if i < fgv1alpha1.MaxHoldingBackListed {
			st.HoldingBack = append(st.HoldingBack, c)
		}
	}
	st.HoldingBackCount = n
	out, err := renderRollout(ro, "")
	require.NoError(t, err)
	assert.Contains(t, out, "holding back: spoke-099: serves revision 1\n")
	assert.NotContains(t, out, "holding back: spoke-100")
	assert.Contains(t, out, "holding back: 50 more (the clusters above give each one's why)\n")
	assert.Regexp(t, `(?m)^spoke-149\s+all\s+1\s+2\s+serves revision 1$`, out)
}

// --watch ends only on the result of the revision it waits for: an
// earlier revision's Complete (the hub has not picked the new one up)
// goes on, and a rollout of that revision that completes, fails or is
// rolled back ends it.
func TestRolloutWatchEndsOnlyOnTheAwaitedRevision(t *testing.T) {
	ro := &fgv1alpha1.GraphRollout{}
	ro.Generation = 1
	ro.Status = fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutComplete, TargetRevision: 2, ObservedGeneration: 1}

	done, err := watchEnds(ro, awaited{revision: 3, why: "the rollout has not started revision 3 yet"})
	assert.False(t, done, "revision 2's Complete does not end a wait for revision 3")
	assert.NoError(t, err)
	done, _ = watchEnds(ro, awaited{why: "the hub has not recorded generation 4 as a revision yet"})
	assert.False(t, done)

	ro.Status.TargetRevision, ro.Status.Phase = 3, fgv1alpha1.RolloutProgressing
	done, _ = watchEnds(ro, awaited{revision: 3})
	assert.False(t, done)
	ro.Status.Phase = fgv1alpha1.RolloutComplete
	done, err = watchEnds(ro, awaited{revision: 3})
	assert.True(t, done)
	assert.NoError(t, err)

	ro.Status.Phase = fgv1alpha1.RolloutFailed
	done, err = watchEnds(ro, awaited{revision: 3})
	assert.True(t, done)
	assert.Error(t, err)

	ro.Status.Phase, ro.Status.RollbackWave = fgv1alpha1.RolloutRolledBack, new(int32)
	done, err = watchEnds(ro, awaited{revision: 3})
	assert.True(t, done)
	assert.Error(t, err, "an automatic rollback of the awaited revision is a failure")

	ro.Generation = 2 // the spec changed; the hub has not looked yet
	done, _ = watchEnds(ro, awaited{revision: 3})
	assert.False(t, done)
}
