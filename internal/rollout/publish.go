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

// With a Publisher, every look publishes the clusters each GraphRollout
// places its graph on, as status.clusters lists them (placed, whether or
// not the target revision reached them yet; held clusters included), as
// the graph's PlacementDecision, and deletes the published decisions of
// graphs no GraphRollout rules or that are not registered any more.

// The reasons of the PlacementPublished condition.
const (
	publishedOK      = "Published"
	publishedFailed  = "Failed"
	publishedNotOurs = "NotOurs"
)

// publication is one look's publishing: what the Publisher found of its
// own, or why it could not look, and the graphs registered.
type publication struct {
	found      placementdecision.Published
	err        error
	registered map[string]bool
	// kept are the graphs whose decisions stay published.
	kept map[string]bool
}

// startPublication reads what is published; nil when nothing is.
func (c *Controller) startPublication(ctx context.Context) *publication {
	if c.Publisher == nil {
		return nil
	}
	pub := &publication{registered: map[string]bool{}, kept: map[string]bool{}}
	for _, g := range c.Hooks.Graphs() {
		pub.registered[g] = true
	}
	pub.found, pub.err = c.Publisher.List(ctx)
	return pub
}

// publish publishes ro's placed clusters (status.clusters) and records
// the outcome in ro's PlacementPublished condition.
func (c *Controller) publish(ctx context.Context, ro *fgv1alpha1.GraphRollout, pub *publication) {
	if pub == nil || !pub.registered[ro.Spec.Graph] {
		meta.RemoveStatusCondition(&ro.Status.Conditions, fgv1alpha1.ConditionPlacementPublished)
		return
	}
	pub.kept[ro.Spec.Graph] = true
	cond := metav1.Condition{Type: fgv1alpha1.ConditionPlacementPublished, ObservedGeneration: ro.Generation,
		Status: metav1.ConditionFalse, Reason: publishedFailed}
	err := pub.err
	n := 0
	if err == nil {
		names := make([]string, len(ro.Status.Clusters))
		for i, cl := range ro.Status.Clusters {
			names[i] = cl.Name
		}
		n, err = c.Publisher.Publish(ctx, ro.Spec.Graph, names, pub.found[ro.Spec.Graph])
		if err == nil {
			cond.Status, cond.Reason = metav1.ConditionTrue, publishedOK
			cond.Message = fmt.Sprintf("%d clusters published in %d PlacementDecision slices in %s", len(names), n, c.Publisher.Namespace)
		}
	}
	if err != nil {
		if errors.Is(err, placementdecision.ErrNotOurs) {
			cond.Reason = publishedNotOurs
		}
		cond.Message = "not published: " + err.Error()
		if was := meta.FindStatusCondition(ro.Status.Conditions, cond.Type); was == nil || was.Message != cond.Message {
			c.Logger.Info("publishing the placement as a PlacementDecision; retrying", "rollout", ro.Name, "reason", err.Error())
		}
	}
	meta.SetStatusCondition(&ro.Status.Conditions, cond)
}

// finishPublication deletes the decisions of graphs no rollout published
// this look.
func (c *Controller) finishPublication(ctx context.Context, pub *publication) {
	if pub == nil || pub.err != nil {
		return
	}
	if err := c.Publisher.Prune(ctx, pub.found, pub.kept); err != nil {
		c.Logger.Info("deleting PlacementDecisions no rollout publishes; retrying", "reason", err.Error())
	}
}
