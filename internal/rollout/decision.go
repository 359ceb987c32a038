package rollout

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetgraph/fleetgraph/internal/placementdecision"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// A GraphRollout may follow a PlacementDecision (spec.placementDecision):
// the placed clusters are then only those the decision lists, as well as
// those the selector and the hook place. The decision is read (from the
// hub's cache) at every look, so a change in it moves clusters in and out
// exactly as a relabel does: the plan's placement changes, the waves are assigned
// again, and reconsider asks the runtime to decide again for every
// cluster whose decision changed. A decision that cannot be read never
// empties the placement: the clusters the last decision read listed are
// kept (after a restart, or a new reference, those status.clusters lists),
// and the condition PlacementDecisionRead says why.

// The reasons of the PlacementDecisionRead condition.
const (
	decisionRead        = "Read"
	decisionNotFound    = "NotFound"
	decisionTooLarge    = "TooLarge"
	decisionReadFailed  = "ReadFailed"
	decisionUnsupported = "NotSupported"
)

// errNoDecisions: the hub was set up without a reader of PlacementDecisions.
var errNoDecisions = errors.New("this hub does not read PlacementDecisions")

// followed is the decision a rollout last read.
type followed struct {
	ref    fgv1alpha1.PlacementDecisionRef
	listed map[string]bool
}

// followDecision returns the clusters ro's PlacementDecision lists (nil
// when it names none), or, when it cannot be read, the ones it listed
// before, and records the outcome in ro's PlacementDecisionRead
// condition.
func (c *Controller) followDecision(ctx context.Context, ro *fgv1alpha1.GraphRollout) map[string]bool {
	ref := ro.Spec.PlacementDecision
	if ref == nil {
		meta.RemoveStatusCondition(&ro.Status.Conditions, fgv1alpha1.ConditionPlacementDecisionRead)
		c.rememberDecision(ro.Name, nil)
		return nil
	}
	var got map[string]bool
	err := errNoDecisions
	if c.Decisions != nil {
		got, err = placementdecision.Read(ctx, c.Decisions, ref.Namespace, ref.Name)
	}
	cond := metav1.Condition{Type: fgv1alpha1.ConditionPlacementDecisionRead, ObservedGeneration: ro.Generation}
	if err == nil {
		c.rememberDecision(ro.Name, &followed{ref: *ref, listed: got})
		cond.Status, cond.Reason = metav1.ConditionTrue, decisionRead
		cond.Message = fmt.Sprintf("PlacementDecision %s/%s lists %d clusters", ref.Namespace, ref.Name, len(got))
		meta.SetStatusCondition(&ro.Status.Conditions, cond)
		return got
	}
	kept := c.keptDecision(ro, *ref)
	cond.Status, cond.Reason = metav1.ConditionFalse, decisionReason(err)
	cond.Message = fmt.Sprintf("%v; the %d clusters placed before are kept", err, len(kept))
	meta.SetStatusCondition(&ro.Status.Conditions, cond)
	return kept
}

// keptDecision is what a rollout whose decision cannot be read keeps
// placed: what the decision last read listed, else (a restarted hub, a
// reference changed) the clusters its status lists.
func (c *Controller) keptDecision(ro *fgv1alpha1.GraphRollout, ref fgv1alpha1.PlacementDecisionRef) map[string]bool {
	c.mu.Lock()
	last := c.decisions[ro.Name]
	c.mu.Unlock()
	if last != nil && last.ref == ref {
		return last.listed
	}
	kept := make(map[string]bool, len(ro.Status.Clusters))
	for _, cl := range ro.Status.Clusters {
		kept[cl.Name] = true
	}
	return kept
}

// rememberDecision records the decision rollout name last read (nil:
// none).
func (c *Controller) rememberDecision(name string, f *followed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f == nil {
		delete(c.decisions, name)
		return
	}
	if c.decisions == nil {
		c.decisions = map[string]*followed{}
	}
	c.decisions[name] = f
}

// forgetDecisions drops what was read for rollouts that are gone.
func (c *Controller) forgetDecisions(present map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.decisions {
		if !present[name] {
			delete(c.decisions, name)
		}
	}
}

// decisionReason is the condition reason for a decision that could not be
// read.
func decisionReason(err error) string {
	switch {
	case errors.Is(err, placementdecision.ErrNotFound):
		return decisionNotFound
	case errors.Is(err, placementdecision.ErrTooManySlices), errors.Is(err, placementdecision.ErrTooManyClusters):
		return decisionTooLarge
	case errors.Is(err, errNoDecisions):
		return decisionUnsupported
	}
	return decisionReadFailed
}
