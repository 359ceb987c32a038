package hubgraph

import (
	"errors"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// Hub graphs are bounded by the same graph.Limits as spoke graphs, kept
// in one place (the graph's, sdk.Options.Limits). Each of a reconcile's
// two passes charges one graph.Budget: resolving the targets (targets.go:
// every computed target and the forEach expansions they need, before
// anything is written), then evaluating and writing (evaluate.go). So
// Limits.MaxChildren counts the children of all of an instance's
// resources whatever cluster they go to (each forEach is expanded, and
// counted, before any of its children is written anywhere) and
// Limits.MaxRenderedBytes the bytes rendered for all of them. An instance
// stopped by a limit goes to ERROR with reason LimitExceeded, naming the
// resource and the limit, and is retried at its namespace's pace
// (fair.go).

// reasonLimitExceeded is an evaluation stopped by one of the graph's
// Limits (graph.ErrLimit), as on spokes.
const reasonLimitExceeded = "LimitExceeded"

// evalReason is the reason of an evaluation error.
func evalReason(err error) string {
	if errors.Is(err, graph.ErrLimit) {
		return reasonLimitExceeded
	}
	return reasonEvaluationFailed
}

// limited reports whether the reconcile was stopped by one of the graph's
// Limits.
func (o *outcome) limited() bool {
	return o.failed != nil && errors.Is(o.failed, graph.ErrLimit)
}
