package instance

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
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
	// ReasonClusterUnreachable is ResourcesReady's reason while a cluster
	// an instance's children live in does not answer, and the reason of a
	// deletion that waits for one.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonDeleting is the reason of an instance whose children are being
	// deleted.
	ReasonDeleting = "Deleting"
)

// Condition is one entry of status.conditions before it is dated.
type Condition struct {
	Type, Status, Reason, Message string
}

// Status is what WriteStatus wrote (or could not write): the state and
// the Ready condition, whose message names what holds the instance back.
type Status struct {
	State string
	Ready Condition
}

// WriteStatus computes the instance's status from a reconcile's outcome
// and patches it only if it differs from what the instance shows: kro's
// state and conditions (InstanceManaged, GraphResolved, ResourcesReady,
// Ready), the driver's extra conditions (after GraphResolved; Ready
// summarises them too), the RGD's projections and own conditions, and
// ResourcesWatched while a watch the instance needs fails. An instance
// that turns to ERROR gets a Warning event naming why.
func (e *Engine) WriteStatus(inst *unstructured.Unstructured, o *Outcome, pruneErr error, extra ...Condition) (Status, error) {
	return statusWriter{e}.write(inst, o, pruneErr, extra)
}

// WriteConditions writes state and conds (dated against what the instance
// shows) as the instance's status, keeping its projected fields: for a
// driver's own verdicts (a refused target) and the deletion's.
func (e *Engine) WriteConditions(inst *unstructured.Unstructured, state string, conds []Condition) error {
	_, err := statusWriter{e}.conditions(inst, state, conds)
	return err
}

// statusWriter writes an engine's instances' status: from an outcome
// (write, with the RGD's own conditions, conditions.go, and
// ResourcesWatched, watch_errors.go), or a driver's or a deletion's
// conditions. Every write is remembered until the instance watch delivers
// it (Writes).
type statusWriter struct{ e *Engine }

func (w statusWriter) write(inst *unstructured.Unstructured, o *Outcome, pruneErr error, extra []Condition) (Status, error) {
	e := w.e
	state, conds := summarize(o, pruneErr, extra)
	fields, err := w.statusFields(o)
	if err != nil && o.failed == nil {
		state = contract.StateError
		reason := ReasonEvaluationFailed
		if errors.Is(err, graph.ErrLimit) {
			reason = ReasonLimitExceeded
		}
		conds.resolved = Condition{contract.ConditionGraphResolved, "False", reason, "status: " + err.Error()}
		conds.ready = Condition{contract.ConditionReady, "False", reason, "status: " + err.Error()}
	}
	wire := dated(wireConditions(inst), conds.list(), inst.GetGeneration())
	if e.g.HasConditions() {
		state, wire = w.authorConditions(inst, o, state, wire)
	}
	wire = withWatchCondition(wire, inst, w.watchCondition(inst))
	st := Status{State: state, Ready: conds.ready}
	if prev, _, _ := unstructured.NestedString(inst.Object, "status", "state"); state == contract.StateError && prev != contract.StateError {
		e.home.recorder().Eventf(inst, nil, corev1.EventTypeWarning, st.Ready.Reason, "Reconcile", "%s", truncateMessage(st.Ready.Message))
	}
	_, err = w.patch(inst, state, wire, fields, true)
	return st, err
}

// conditions writes state and conds as the instance's status, keeping its
// projected fields, and returns the instance as written (inst when
// nothing changed).
func (w statusWriter) conditions(inst *unstructured.Unstructured, state string, conds []Condition) (*unstructured.Unstructured, error) {
	return w.patch(inst, state, dated(wireConditions(inst), conds, inst.GetGeneration()), nil, false)
}

// statusFields evaluates the RGD's status projections, recovering panics.
func (w statusWriter) statusFields(o *Outcome) (fields map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError("status", r)
		}
	}()
	return w.e.g.Status(o.ctx, o.vals)
}

// builtins are kro's conditions and a driver's, before they are dated.
type builtins struct {
	managed, resolved Condition
	extra             []Condition
	resources, ready  Condition
}

func (b builtins) list() []Condition {
	out := append([]Condition{b.managed, b.resolved}, b.extra...)
	return append(out, b.resources, b.ready)
}

// summarize turns an outcome into a state and the built-in conditions.
func summarize(o *Outcome, pruneErr error, extra []Condition) (string, builtins) {
	b := builtins{
		managed:   Condition{contract.ConditionInstanceManaged, "True", "Managed", MessageManaged},
		resolved:  Condition{contract.ConditionGraphResolved, "True", "Resolved", MessageResolved},
		extra:     extra,
		resources: Condition{contract.ConditionResourcesReady, "True", "AllResourcesReady", MessageResourcesReady},
	}
	state := contract.StateActive
	switch {
	case o.failed != nil && (o.failed.reason == ReasonEvaluationFailed || o.failed.reason == ReasonLimitExceeded):
		state = contract.StateError
		b.resolved = Condition{contract.ConditionGraphResolved, "False", o.failed.reason, o.failed.message}
		b.resources = Condition{contract.ConditionResourcesReady, "False", o.failed.reason, o.failed.message}
	case o.failed != nil:
		state = contract.StateError
		b.resources = Condition{contract.ConditionResourcesReady, "False", o.failed.reason, o.failed.message}
	case pruneErr != nil:
		state = contract.StateError
		b.resources = Condition{contract.ConditionResourcesReady, "False", "PruneFailed", pruneErr.Error()}
	case len(o.deleting) > 0:
		state = contract.StateInProgress
		b.resources = Condition{contract.ConditionResourcesReady, "False", ReasonResourceDeleting, strings.Join(o.deleting, "; ")}
	case len(o.waiting) > 0:
		state = contract.StateInProgress
		reason := ReasonNotReady
		if o.down.any() {
			reason = ReasonClusterUnreachable
		}
		b.resources = Condition{contract.ConditionResourcesReady, "False", reason, strings.Join(o.waiting, "; ")}
	}
	b.ready = readyOf(append(append([]Condition{b.managed, b.resolved}, extra...), b.resources)...)
	return state, b
}

// readyOf is True when every other condition is, else carries the first
// false one's reason and message.
func readyOf(conds ...Condition) Condition {
	for _, c := range conds {
		if c.Status != "True" {
			return Condition{contract.ConditionReady, "False", c.Reason, c.Message}
		}
	}
	return Condition{contract.ConditionReady, "True", "Ready", ""}
}

// patch writes state, conditions and fields as the instance's status if
// anything changed, and returns the instance as written (inst itself when
// nothing changed, or when the write met a conflict, which the next
// reconcile puts right). A fresh status is the whole status, as kro
// writes it: fields that can no longer be evaluated are removed rather
// than left stale. Otherwise the fields are merged into what the instance
// shows.
func (w statusWriter) patch(inst *unstructured.Unstructured, state string, conds []any, fields map[string]any, fresh bool) (*unstructured.Unstructured, error) {
	old, _, _ := unstructured.NestedMap(inst.Object, "status")
	next := map[string]any{}
	if !fresh && old != nil {
		next = runtime.DeepCopyJSON(old)
	}
	maps.Copy(next, fields)
	next["state"] = state
	next["conditions"] = conds
	if sameJSON(old, next) {
		return inst, nil
	}
	patch := maps.Clone(next)
	for k := range old {
		if _, kept := next[k]; !kept {
			patch[k] = nil // a merge patch removes a key set to null
		}
	}
	out, err := instanceWriter{w.e}.patch(inst, map[string]any{"status": patch}, true)
	if errors.Is(err, ErrConflict) {
		return inst, nil
	}
	return out, err
}

// wireConditions is the conditions list the instance shows.
func wireConditions(inst *unstructured.Unstructured) any {
	conds, _, _ := unstructured.NestedFieldNoCopy(inst.Object, "status", "conditions")
	return conds
}

// dated renders conditions as the API shows them, keeping the transition
// time of one whose status did not change.
func dated(old any, conds []Condition, generation int64) []any {
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

// maxConditionMessage bounds a condition's (and an event's) message: it
// may join the messages of many resources, each quoting an expression
// (already cut to the graph's Limits.MaxMessageExpression).
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

// deletingConditions describe an instance whose children are being
// deleted: reason (ReasonDeleting, or ReasonClusterUnreachable while a
// cluster does not answer) and what the deletion waits for.
func deletingConditions(reason, msg string) []Condition {
	return []Condition{
		{contract.ConditionInstanceManaged, "True", "Managed", MessageManaged},
		{contract.ConditionGraphResolved, "True", "Resolved", MessageResolved},
		{contract.ConditionResourcesReady, "False", reason, msg},
		{contract.ConditionReady, "False", reason, msg},
	}
}
