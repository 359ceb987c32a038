package sdk_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/fleetgraph/fleetgraph/sdk"
)

// A platform's own check ("the error budget of the canary region is
// intact") approves the wave with approval: Required that the webapp
// graph's rollout waits on.
func ExampleHub_Approve() {
	var hub *sdk.Hub // from sdk.NewHub, running
	budgetIntact := func() bool { return true }

	st, ok := hub.Rollout("webapp")
	if !ok || st.AwaitingApproval == "" || !budgetIntact() {
		return
	}
	err := hub.Approve(context.Background(), "webapp", st.AwaitingApproval)
	switch {
	case errors.Is(err, sdk.ErrUnknownWave), errors.Is(err, sdk.ErrNoRollout):
		fmt.Println("the rollout changed meanwhile:", err)
	case err != nil:
		fmt.Println("approving:", err)
	}
}

// An operator takes the webapp graph back to the revision the fleet stood
// on, through the rollout's waves rather than everywhere at once, and
// follows it: the phase is RollingBack, status.manualRollback names the
// wave, and the rollout ends RolledBack with reason Manual.
func ExampleHub_RollBackInWaves() {
	var hub *sdk.Hub // from sdk.NewHub, running
	st, ok := hub.Rollout("webapp")
	if !ok {
		return
	}
	if err := hub.RollBackInWaves(context.Background(), "webapp", st.StableRevision); err != nil {
		fmt.Println("rolling back:", err)
		return
	}
	if st, _ = hub.Rollout("webapp"); st.ManualRollback != nil {
		fmt.Printf("%s to revision %d, wave %q\n", st.Phase, st.ManualRollback.Revision, st.ManualRollback.WaveName)
	}
}
