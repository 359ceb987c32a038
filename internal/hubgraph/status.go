package hubgraph

import (
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// A hub instance's status is the engine's (kro's states and conditions,
// the RGD's projections and own conditions, ResourcesWatched), plus one
// condition of its own: TargetsAllowed.

// ConditionTargetsAllowed says whether every target of the instance was
// allowed; False names the resource, the cluster and the rule.
const ConditionTargetsAllowed = "TargetsAllowed"

// ReasonTargetRefused is TargetsAllowed's reason when a target was refused.
const ReasonTargetRefused = "TargetRefused"

// targetsAllowed is the condition of an instance whose targets were all
// allowed, written with the engine's.
var targetsAllowed = instance.Condition{Type: ConditionTargetsAllowed, Status: "True", Reason: "Allowed"}

// refused reports a target refusal: nothing was written anywhere.
func (s *server) refused(inst *unstructured.Unstructured, err error) (reconcile.Result, error) {
	reason := ReasonTargetRefused
	if !errors.Is(err, ErrTargetRefused) {
		reason = instance.ReasonEvaluationFailed
		if errors.Is(err, graph.ErrLimit) {
			reason = instance.ReasonLimitExceeded
		}
	}
	conds := []instance.Condition{
		{Type: contract.ConditionInstanceManaged, Status: "True", Reason: "Managed", Message: instance.MessageManaged},
		{Type: ConditionTargetsAllowed, Status: "False", Reason: reason, Message: err.Error()},
		{Type: contract.ConditionReady, Status: "False", Reason: reason, Message: err.Error()},
	}
	if perr := s.engine.Load().WriteConditions(inst, contract.StateError, conds); perr != nil {
		return reconcile.Result{}, perr
	}
	// An engaged cluster, a relabelled one or a changed policy may lift
	// the refusal: look again later.
	return reconcile.Result{RequeueAfter: 10 * waitingRequeue}, nil
}
