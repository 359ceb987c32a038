package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// Health gates beyond readyPercent: maxErrorPercent bounds the instances
// the revision being rolled out itself reconciled to ERROR (the runtime's
// per-version states, like Ready's Confirmed: what an earlier revision
// wrote never counts), and spec.health.instanceCondition, a CEL condition
// over each instance, must hold for an instance to count as Ready. The
// condition is type-checked against the latest revision at every look; one
// that does not compile refuses the rollout: the HealthConditionValid
// condition turns False, an event names the expression, the rollout stands
// where it is and no later revision reaches any cluster, until the
// condition is fixed.

// ErrInvalidHealthCondition: a health condition does not type-check
// against the graph's instance kind.
var ErrInvalidHealthCondition = errors.New("the health condition does not type-check")

// Reasons of the HealthConditionValid condition.
const (
	reasonConditionCompiled = "Compiled"
	reasonConditionInvalid  = "InvalidHealthCondition"
)

// maxWhy bounds the messages a health gate quotes (an instance's name and
// an evaluation error).
const maxWhy = 512

// healthWhy says why a cluster that serves the target with its CRD
// established and every instance reconciled is not healthy ("": it is).
func healthWhy(h fgv1alpha1.HealthPolicy, share int32, o Observation) string {
	total := max(o.Instances, o.Listed)
	if h.MaxErrorPercent != nil && int64(o.Errors)*100 > int64(*h.MaxErrorPercent)*int64(total) {
		return fmt.Sprintf("%d of %d instances in ERROR, at most %d%% allowed", o.Errors, total, *h.MaxErrorPercent)
	}
	ready := o.Ready
	if o.Judged {
		ready = min(ready, o.Passing)
	}
	if int64(ready)*100 >= int64(share)*int64(total) {
		return ""
	}
	if o.Judged && o.Passing < o.Ready {
		return fmt.Sprintf("%d of %d instances Ready and passing the health condition, %d%% needed: %s", ready, total, share, o.Why)
	}
	return fmt.Sprintf("%d of %d instances Ready, %d%% needed", o.Ready, total, share)
}

// checkHealthCondition type-checks spec.health.instanceCondition against
// the latest revision and records the outcome in the status; it returns
// the event to record when the condition turns invalid.
func (c *Controller) checkHealthCondition(ro *fgv1alpha1.GraphRollout, latest int64) []event {
	st, src := &ro.Status, ro.Spec.Health.InstanceCondition
	if src == "" {
		meta.RemoveStatusCondition(&st.Conditions, fgv1alpha1.ConditionHealthConditionValid)
		if len(st.Conditions) == 0 {
			st.Conditions = nil
		}
		return nil
	}
	if latest == 0 {
		return nil // not registered: nothing to check against yet
	}
	err := errors.New("this hub does not evaluate health conditions")
	if c.Hooks.CheckCondition != nil {
		err = c.Hooks.CheckCondition(ro.Spec.Graph, src)
	}
	cond := metav1.Condition{
		Type: fgv1alpha1.ConditionHealthConditionValid, Status: metav1.ConditionTrue, Reason: reasonConditionCompiled,
		Message: fmt.Sprintf("spec.health.instanceCondition type-checks against revision %d", latest), ObservedGeneration: ro.Generation,
	}
	if err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, reasonConditionInvalid
		cond.Message = truncateAt(fmt.Sprintf("revision %d: %v", latest, err), maxWhy)
	}
	was := meta.FindStatusCondition(st.Conditions, cond.Type)
	if was == nil || was.Status != cond.Status {
		cond.LastTransitionTime = metaNow()
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if err == nil {
		return nil
	}
	if was != nil && was.Status == metav1.ConditionFalse && was.Message == cond.Message {
		return nil
	}
	return []event{{"Warning", "HealthConditionRefused", "refused: " + cond.Message}}
}

// sayRefused makes the status's message say that the rollout is refused,
// and why.
func sayRefused(st *fgv1alpha1.GraphRolloutStatus) {
	if c := meta.FindStatusCondition(st.Conditions, fgv1alpha1.ConditionHealthConditionValid); c != nil && c.Status == metav1.ConditionFalse {
		st.Message = "refused: " + c.Message
	}
}

// refused reports whether the status says the health condition does not
// compile.
func refused(st fgv1alpha1.GraphRolloutStatus) bool {
	return meta.IsStatusConditionFalse(st.Conditions, fgv1alpha1.ConditionHealthConditionValid)
}

// refusedAbove is the revision above which a refused rollout lets no
// revision go (0: not refused).
func refusedAbove(st fgv1alpha1.GraphRolloutStatus) int64 {
	if !refused(st) {
		return 0
	}
	return st.TargetRevision
}

// decideRefused holds back every revision later than a refused rollout's
// target (a rollback still goes).
func (p *plan) decideRefused(rev int64) error {
	if p == nil || p.refusedAbove == 0 || p.spec.RollbackTo > 0 || rev <= p.refusedAbove {
		return nil
	}
	return fmt.Errorf("%w: revision %d: the rollout's health condition does not type-check", ErrHeldBack, rev)
}

// judge asks the health condition of the instances of the clusters of the
// wave in progress that serve the target revision.
func (c *Controller) judge(ctx context.Context, ro *fgv1alpha1.GraphRollout, waves map[string]int32, obs map[string]Observation) {
	src := ro.Spec.Health.InstanceCondition
	if src == "" || c.Hooks.Judge == nil {
		return
	}
	for name, w := range waves {
		o := obs[name]
		if w != ro.Status.Wave || o.Revision != ro.Status.TargetRevision || !o.Established || o.Replica != "" {
			continue
		}
		n, why, err := c.Hooks.Judge(ctx, ro.Spec.Graph, name, src)
		if err != nil {
			n, why = 0, err.Error()
		}
		o.Judged, o.Passing, o.Why = true, n, truncateAt(why, maxWhy)
		obs[name] = o
	}
}

// SetHealthCondition sets spec.health.instanceCondition of the
// GraphRollout named name, or of the one that rules the graph named name,
// once it type-checks against the graph's latest revision ("" removes
// it). It returns ErrNoRollout when there is no such GraphRollout and
// ErrInvalidHealthCondition (wrapping the compiler's error, which names
// the expression) when it does not type-check; then nothing is written.
func (c *Controller) SetHealthCondition(ctx context.Context, name, condition string) error {
	ro, err := c.find(ctx, name)
	if err != nil {
		return err
	}
	value := any(condition)
	if condition == "" {
		value = nil
	} else if c.Hooks.CheckCondition == nil {
		return fmt.Errorf("GraphRollout %s: %w: this hub does not evaluate health conditions", ro.Name, ErrInvalidHealthCondition)
	} else if err := c.Hooks.CheckCondition(ro.Spec.Graph, condition); err != nil {
		return fmt.Errorf("GraphRollout %s: %w: %w", ro.Name, ErrInvalidHealthCondition, err)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"health": map[string]any{"instanceCondition": value}}})
	if err != nil {
		return fmt.Errorf("GraphRollout %s: %w", ro.Name, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName(ro.Name)
	if err := c.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(c.fieldManager())); err != nil {
		return fmt.Errorf("setting the health condition of GraphRollout %s: %w", ro.Name, err)
	}
	return nil
}

// truncateAt bounds s to n bytes, marking a cut.
func truncateAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
