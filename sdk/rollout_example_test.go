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
