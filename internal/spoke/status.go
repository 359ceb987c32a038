package spoke

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// The messages and reasons of the built-in conditions, kro v0.9.4's words:
// tooling written for kro reads them.
const (
	MessageManaged        = "instance is properly managed with finalizers and labels"
	MessageResolved       = "runtime graph created and all resources resolved"
	MessageResourcesReady = "all resources are created and ready"
	// ReasonNotReady is ResourcesReady's reason while a resource is not
	// ready yet; the message says what each one waits for.
	ReasonNotReady = "NotReady"
)

// condition is one entry of status.conditions before it is dated.
type condition struct {
	Type, Status, Reason, Message string
}

// instanceWriter writes a member's instances: their status, computed from
// a reconcile's outcome (with the conditions the RGD declares,
// conditions.go, and ResourcesWatched, watch_errors.go), and their
// finalizer and child kinds (instance_writes.go). Every write is
// remembered until the cache has it (instanceMemory).
type instanceWriter struct{ m *member }

// writeStatus computes the instance's status from a reconcile's outcome and
// patches it only if it differs from what the instance shows. It returns the
// state written and the Ready condition, whose message names the node that
// holds the instance back.
func (w instanceWriter) writeStatus(inst *unstructured.Unstructured, o *outcome, pruneErr error) (string, condition, error) {
	m := w.m
	state, conds := summarize(o, pruneErr)
	fields, err := w.statusFields(o)
	if err != nil && o.failed == nil {
		state = contract.StateError
		reason := reasonEvaluationFailed
		if errors.Is(err, graph.ErrLimit) {
			reason = reasonLimitExceeded
		}
		conds[1] = condition{contract.ConditionGraphResolved, "False", reason, "status: " + err.Error()}
		conds[3] = condition{contract.ConditionReady, "False", reason, "status: " + err.Error()}
	}
	wire := dated(wireConditions(inst), conds, inst.GetGeneration())
	if m.g.HasConditions() {
		state, wire = w.authorConditions(inst, o, state, wire)
	}
	wire = withWatchCondition(wire, inst, w.watchCondition(inst))
	return state, conds[3], w.patchStatus(inst, state, wire, fields, true)
}

// statusFields evaluates the RGD's status projections, recovering panics.
func (w instanceWriter) statusFields(o *outcome) (fields map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError("status", r)
		}
	}()
	return w.m.g.Status(o.ctx, o.vals)
}

// summarize turns an outcome into a state and the four conditions, in the
// order InstanceManaged, GraphResolved, ResourcesReady, Ready.
func summarize(o *outcome, pruneErr error) (string, []condition) {
	managed := condition{contract.ConditionInstanceManaged, "True", "Managed", MessageManaged}
	resolved := condition{contract.ConditionGraphResolved, "True", "Resolved", MessageResolved}
	resources := condition{contract.ConditionResourcesReady, "True", "AllResourcesReady", MessageResourcesReady}
	state := contract.StateActive
	switch {
	case o.failed != nil && (o.failed.reason == reasonEvaluationFailed || o.failed.reason == reasonLimitExceeded):
		state = contract.StateError
		resolved = condition{contract.ConditionGraphResolved, "False", o.failed.reason, o.failed.message}
		resources = condition{contract.ConditionResourcesReady, "False", o.failed.reason, o.failed.message}
	case o.failed != nil:
		state = contract.StateError
		resources = condition{contract.ConditionResourcesReady, "False", o.failed.reason, o.failed.message}
	case pruneErr != nil:
		state = contract.StateError
		resources = condition{contract.ConditionResourcesReady, "False", "PruneFailed", pruneErr.Error()}
	case len(o.deleting) > 0:
		state = contract.StateInProgress
		resources = condition{contract.ConditionResourcesReady, "False", reasonResourceDeleting, strings.Join(o.deleting, "; ")}
	case len(o.waiting) > 0:
		state = contract.StateInProgress
		resources = condition{contract.ConditionResourcesReady, "False", ReasonNotReady, strings.Join(o.waiting, "; ")}
	}
	return state, []condition{managed, resolved, resources, readyOf(managed, resolved, resources)}
}

// readyOf is True when every other condition is, else carries the first
// false one's reason and message.
func readyOf(conds ...condition) condition {
	for _, c := range conds {
		if c.Status != "True" {
			return condition{contract.ConditionReady, "False", c.Reason, c.Message}
		}
	}
	return condition{contract.ConditionReady, "True", "Ready", ""}
}

// patchStatus writes state, conditions and fields as the instance's status
// if anything changed. A fresh status is the whole status, as kro writes
// it: fields that can no longer be evaluated are removed rather than left
// stale. Otherwise the fields are merged into what the instance shows.
func (w instanceWriter) patchStatus(inst *unstructured.Unstructured, state string, conds []any, fields map[string]any, fresh bool) error {
	old, _, _ := unstructured.NestedMap(inst.Object, "status")
	next := map[string]any{}
	if !fresh && old != nil {
		next = runtime.DeepCopyJSON(old)
	}
	for k, v := range fields {
		next[k] = v
	}
	next["state"] = state
	next["conditions"] = conds
	if sameJSON(old, next) {
		return nil
	}
	patch := maps.Clone(next)
	for k := range old {
		if _, kept := next[k]; !kept {
			patch[k] = nil // a merge patch removes a key set to null
		}
	}
	_, err := w.patchInstance(inst, map[string]any{"status": patch}, true)
	if errors.Is(err, errConflict) {
		return nil
	}
	return err
}

// wireConditions is the conditions list the instance shows.
func wireConditions(inst *unstructured.Unstructured) any {
	conds, _, _ := unstructured.NestedFieldNoCopy(inst.Object, "status", "conditions")
	return conds
}

// dated renders conditions as the API shows them.
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
		out = append(out, map[string]any{
			"type": c.Type, "status": c.Status, "reason": c.Reason, "message": truncateMessage(c.Message),
			"observedGeneration": generation, "lastTransitionTime": at,
		})
	}
	return out
}

// maxConditionMessage bounds a condition's message: it may join the
// messages of many resources, each quoting an expression (already cut to
// the graph's Limits.MaxMessageExpression).
const maxConditionMessage = 4 << 10

// truncateMessage cuts a condition's message to maxConditionMessage bytes,
// on a character boundary, marking the cut.
func truncateMessage(s string) string {
	if len(s) <= maxConditionMessage {
		return s
	}
	cut := maxConditionMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// deletingConditions describes an instance whose children are being
// deleted, naming the child that holds it.
func deletingConditions(blocker string) []condition {
	msg := "deleting: waiting for " + blocker + " to be deleted"
	return []condition{
		{contract.ConditionInstanceManaged, "True", "Managed", MessageManaged},
		{contract.ConditionGraphResolved, "True", "Resolved", MessageResolved},
		{contract.ConditionResourcesReady, "False", "Deleting", msg},
		{contract.ConditionReady, "False", "Deleting", msg},
	}
}
