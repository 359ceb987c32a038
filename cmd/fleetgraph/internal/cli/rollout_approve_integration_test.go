//go:build integration

package cli_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// approveOnAHub approves the canary wave of revision 2, which awaits
// approval, and revision 2, from the command line; every approval that
// would approve nothing is refused with exit code 1 and a reason, and
// leaves no annotation behind. It runs on the GraphRollout steerRollout
// left: waves canary (approval Required, awaiting) and rest.
func approveOnAHub(t *testing.T) {
	r := hub(t, "rollout", "approve", "webapp")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp approved wave \"canary\" of revision 2\n", r.out, r.String())
	requireApproval(t, fgv1alpha1.RolloutApproval{Revision: 2, Wave: "canary"})
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Empty(ct, readRollout(ct).Status.AwaitingApproval)
	}, wait, tick, "the canary wave goes on")

	for _, c := range []struct {
		args []string
		why  string
	}{
		{nil, `error: nothing awaits approval in GraphRollout webapp (phase Progressing, revision 2, wave "canary")`},
		{[]string{"--wave", "rest"}, `error: wave "rest" of GraphRollout webapp requires no approval (spec.waves[1].approval is not Required)`},
		{[]string{"--wave", "nosuch"}, `error: GraphRollout webapp has no wave "nosuch" (its waves: canary, rest)`},
		{[]string{"--revision", "7"}, `error: graph webapp has no revision 7 (no GraphRevision webapp-r00007)`},
		{[]string{"--revision", "1"}, `error: revision 1 is older than revision 2, which GraphRollout webapp rolls out`},
	} {
		r := hub(t, append([]string{"rollout", "approve", "webapp"}, c.args...)...)
		assert.Equal(t, cli.ExitFailed, r.code, r.String())
		assert.Equal(t, c.why+"\n", r.err, "%v", c.args)
		assert.Empty(t, r.out)
	}
	assert.Empty(t, readRollout(t).Annotations[cli.AnnotationApprove], "a refused approval sets nothing")

	r = hub(t, "rollout", "approve", "webapp", "--wave", "canary")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp already approved wave \"canary\" of revision 2\n", r.out, r.String())
	r = hub(t, "rollout", "approve", "webapp", "--revision", "2")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp approved revision 2\n", r.out, r.String())
	requireApproval(t, fgv1alpha1.RolloutApproval{Revision: 2})
}
