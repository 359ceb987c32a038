package instance

import (
	"fmt"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// The graph's per-instance Limits (graph.Limits, kept in the compiled
// graph) are enforced here, at one point whichever driver serves the
// instance: every reconcile charges one graph.Budget (Evaluate makes it),
// which every evaluation of that reconcile spends, forEach items, readyWhen
// and status projections included. So
//
//   - Limits.InstanceCost and Limits.InstanceTimeout bound the whole
//     reconcile's evaluations;
//   - Limits.MaxChildren counts the children of all of an instance's
//     resources whatever cluster they go to: each level of the graph is
//     expanded and counted before any child of that level is written
//     anywhere, and a level that passes the limit writes nothing;
//   - Limits.MaxRenderedBytes counts the bytes rendered for all of them;
//   - Limits.MaxStatusBytes bounds the status projections and conditions.
//
// An instance stopped by a limit goes to ERROR with reason LimitExceeded,
// naming the resource and the limit (Outcome.Limited tells the driver,
// whose queue retries it at its namespace's pace, package fair). A hub
// graph's driver resolves computed targets before the engine runs, with a
// budget of its own bounded by the same Limits.

// tooManyChildren is the result of a node of a level whose nodes' children
// together pass Limits.MaxChildren: it applies nothing.
func tooManyChildren(n *graph.Node, children int64, limit int) *nodeResult {
	return failed(n, ReasonLimitExceeded, fmt.Errorf("forEach: %w: nothing applied: the instance's resources would have %d children or more together, over the limit of %d (Limits.MaxChildren)",
		graph.ErrLimit, children, limit))
}
