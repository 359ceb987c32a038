package instance

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// authorConditions gives the conditions of an instance whose RGD declares
// its own (spec.schema.status.conditions), as kro v0.9.4 does:
//   - only the declared conditions are shown; the runtime's four stay
//     readable from CEL through runtime.condition(schema, 'Ready'), because
//     they are handed to the expressions as schema.status.conditions;
//   - a type whose inputs are not observed yet keeps what was shown;
//   - an expression that fails turns the state to ERROR, and the conditions
//     that did evaluate are still shown.
//
// builtins are the runtime's own conditions, already dated.
func (w statusWriter) authorConditions(inst *unstructured.Unstructured, o *Outcome, state string, builtins []any) (string, []any) {
	authored, incomplete, err := w.evalAuthored(inst, o, builtins)
	if err != nil {
		state = contract.StateError
		w.e.log.V(1).Info("author conditions degraded", "instance", keyOf(inst), "error", err.Error())
	}
	conds := make([]Condition, 0, len(authored))
	for _, a := range authored {
		conds = append(conds, Condition{Type: str(a["type"]), Status: str(a["status"]), Reason: str(a["reason"]), Message: str(a["message"])})
	}
	shown := wireConditions(inst)
	wire := dated(shown, conds, inst.GetGeneration())
	if incomplete {
		wire = keepShown(wire, shown)
	}
	return state, wire
}

// evalAuthored evaluates the declared conditions with the built-in ones in
// schema.status.conditions, recovering panics.
func (w statusWriter) evalAuthored(inst *unstructured.Unstructured, o *Outcome, builtins []any) (conds []map[string]any, incomplete bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError("status.conditions", r)
		}
	}()
	self := maps.Clone(inst.Object)
	status, _ := self["status"].(map[string]any)
	status = maps.Clone(status)
	if status == nil {
		status = map[string]any{}
	}
	status["conditions"] = builtins
	self["status"] = status
	vals := maps.Clone(o.vals)
	vals["schema"] = self
	return w.e.g.Conditions(o.ctx, graph.Values(vals))
}

// keepShown appends the shown conditions whose types wire lacks.
func keepShown(wire []any, shown any) []any {
	have := map[string]bool{}
	for _, c := range wire {
		have[str(c.(map[string]any)["type"])] = true
	}
	list, _ := shown.([]any)
	for _, c := range list {
		if cm, ok := c.(map[string]any); ok && !have[str(cm["type"])] {
			wire = append(wire, cm)
		}
	}
	return wire
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
