package hubgraph

import (
	"context"
	"errors"
	"maps"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// ConditionTargetsAllowed says whether every target of the instance was
// allowed; False names the resource, the cluster and the rule.
const ConditionTargetsAllowed = "TargetsAllowed"

// condition is one status condition before it is dated.
type condition struct {
	Type, Status, Reason, Message string
}

// maxMessage bounds a condition's message.
const maxMessage = 1024

// reporter writes one graph's instances' status on the hub: their state,
// conditions and projected fields. It is not written to after it is made
// and needs no lock.
type reporter struct {
	rt *Runtime
	g  *graph.Graph
	// writes learns each status write, whose echo requeues nothing.
	writes *ownWrites
}

// conditionsOf turns an outcome into the instance's state and conditions.
func conditionsOf(o *outcome, pruneErr error) (string, []condition) {
	managed := condition{Type: contract.ConditionInstanceManaged, Status: "True", Reason: "Managed"}
	resolved := condition{Type: contract.ConditionGraphResolved, Status: "True", Reason: "Resolved"}
	targets := condition{Type: ConditionTargetsAllowed, Status: "True", Reason: "Allowed"}
	ready := condition{Type: contract.ConditionResourcesReady, Status: "True", Reason: "AllResourcesReady"}
	state := contract.StateActive
	switch {
	case o.failed != nil:
		state = contract.StateError
		ready = condition{Type: contract.ConditionResourcesReady, Status: "False", Reason: o.reason, Message: o.failed.Error()}
	case pruneErr != nil:
		state = contract.StateError
		ready = condition{Type: contract.ConditionResourcesReady, Status: "False", Reason: "PruneFailed", Message: pruneErr.Error()}
	case len(o.waiting) > 0:
		state = contract.StateInProgress
		reason := "NotReady"
		if len(o.down) > 0 {
			reason = reasonClusterWaiting
		}
		ready = condition{Type: contract.ConditionResourcesReady, Status: "False", Reason: reason, Message: strings.Join(o.waiting, "; ")}
	}
	summary := condition{Type: contract.ConditionReady, Status: ready.Status, Reason: ready.Reason, Message: ready.Message}
	return state, []condition{managed, resolved, targets, ready, summary}
}

// writeStatus writes the outcome's state, conditions and projected
// fields, when they changed.
func (r *reporter) writeStatus(ctx context.Context, inst *unstructured.Unstructured, o *outcome, pruneErr error) (string, error) {
	state, conds := conditionsOf(o, pruneErr)
	fields, err := r.g.Status(o.ctx, o.vals)
	if err != nil && !errors.Is(err, graph.ErrPending) {
		state = contract.StateError
		conds[len(conds)-1] = condition{Type: contract.ConditionReady, Status: "False", Reason: evalReason(err), Message: err.Error()}
	}
	return state, r.patchStatus(ctx, inst, state, conds, fields)
}

// refused reports a target refusal: nothing was written anywhere.
func (r *reporter) refused(ctx context.Context, inst *unstructured.Unstructured, err error) (reconcile.Result, error) {
	reason := reasonTargetRefused
	if !errors.Is(err, ErrTargetRefused) {
		reason = evalReason(err)
	}
	conds := []condition{
		{Type: contract.ConditionInstanceManaged, Status: "True", Reason: "Managed"},
		{Type: ConditionTargetsAllowed, Status: "False", Reason: reason, Message: err.Error()},
		{Type: contract.ConditionReady, Status: "False", Reason: reason, Message: err.Error()},
	}
	if perr := r.patchStatus(ctx, inst, contract.StateError, conds, nil); perr != nil {
		return reconcile.Result{}, perr
	}
	// An engaged cluster, a relabelled one or a changed policy may lift
	// the refusal: look again later.
	return reconcile.Result{RequeueAfter: 10 * waitingRequeue}, nil
}

// patchStatus merges state, conditions and fields into the instance's
// status and patches it when it changed.
func (r *reporter) patchStatus(ctx context.Context, inst *unstructured.Unstructured, state string, conds []condition, fields map[string]any) error {
	old, _, _ := unstructured.NestedMap(inst.Object, "status")
	status := maps.Clone(old)
	if status == nil {
		status = map[string]any{}
	}
	maps.Copy(status, fields)
	status["state"] = state
	status["conditions"] = dated(old["conditions"], conds, inst.GetGeneration())
	if equality.Semantic.DeepEqual(status, old) {
		return nil
	}
	orig := inst.DeepCopy()
	if err := unstructured.SetNestedMap(inst.Object, status, "status"); err != nil {
		return err
	}
	cctx, cancel := r.rt.callCtx(ctx)
	defer cancel()
	err := r.writes.writing(keyOf(inst.GetNamespace(), inst.GetName()), inst, func() error {
		return r.rt.hub().GetClient().Status().Patch(cctx, inst, client.MergeFrom(orig))
	})
	return client.IgnoreNotFound(err)
}

// dated gives conditions their wire form, keeping the transition time of
// one whose status did not change.
func dated(old any, conds []condition, generation int64) []any {
	previous := map[string]map[string]any{}
	if list, ok := old.([]any); ok {
		for _, c := range list {
			if cm, ok := c.(map[string]any); ok {
				t, _ := cm["type"].(string)
				previous[t] = cm
			}
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	out := make([]any, 0, len(conds))
	for _, c := range conds {
		at := now
		if p := previous[c.Type]; p != nil && p["status"] == c.Status {
			if t, ok := p["lastTransitionTime"].(string); ok {
				at = t
			}
		}
		msg := c.Message
		if len(msg) > maxMessage {
			msg = msg[:maxMessage] + "..."
		}
		out = append(out, map[string]any{
			"type": c.Type, "status": c.Status, "reason": c.Reason, "message": msg,
			"lastTransitionTime": at, "observedGeneration": generation,
		})
	}
	return out
}
