package sdk_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/fleetgraph/fleetgraph/sdk"
)

// A platform holds a customer's cluster on the revision it serves during
// the customer's freeze, and lets it catch up afterwards; the rollout goes
// on elsewhere meanwhile.
func ExampleHub_Hold() {
	var hub *sdk.Hub // from sdk.NewHub, running
	ctx := context.Background()

	if err := hub.Hold(ctx, "webapp", "customer-a", "change freeze until Monday"); err != nil {
		fmt.Println("holding:", err)
		return
	}
	// ... after the freeze:
	err := hub.Release(ctx, "webapp", "customer-a")
	switch {
	case errors.Is(err, sdk.ErrHeldBySelector):
		fmt.Println("a label selector holds it: edit spec.holds")
	case err != nil && !errors.Is(err, sdk.ErrNotHeld):
		fmt.Println("releasing:", err)
	}
}

// A wave counts an instance as Ready only once its Deployment has every
// replica available; a condition that does not type-check against the
// graph's instance kind is refused before it is written.
func ExampleHub_SetHealthCondition() {
	var hub *sdk.Hub // from sdk.NewHub, running
	err := hub.SetHealthCondition(context.Background(), "webapp",
		`instance.status.availableReplicas >= instance.spec.replicas`)
	if errors.Is(err, sdk.ErrInvalidHealthCondition) {
		fmt.Println("refused:", err)
	}
}
