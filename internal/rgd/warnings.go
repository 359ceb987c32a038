package rgd

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// An RGD that kro accepts is served, but some of what it says is likely
// to cost more or do other than its author meant (graph.Warning: an
// unbounded list in an expensive expression, a malformed duration
// literal, a "${" nothing closes). `fleetgraph validate` prints those
// before the RGD is applied; this file tells the people who only read the
// RGD: GraphAccepted stays True with kro's reason, its message counts the
// warnings and quotes them, and each is a Warning event the first time
// the RGD's generation shows it.

// acceptedMessage is GraphAccepted's message for a compiled graph: kro's,
// followed by the warnings when there are any.
const acceptedMessage = "resource graph and schema are valid"

// maxWarningEvents bounds the events one generation of an RGD records: a
// tenant's RGD can carry many warnings, the condition counts them all.
const maxWarningEvents = 10

// accepted sets GraphAccepted True for g, and records its warnings as
// events when this generation's message is new.
func (r *Reconciler) accepted(rgd *v1alpha1.ResourceGraphDefinition, st *v1alpha1.ResourceGraphDefinitionStatus, g *graph.Graph) {
	var ws []graph.Warning
	if g != nil {
		ws = g.Warnings
	}
	msg := warnedMessage(ws)
	prev := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGraphAccepted)
	fresh := prev == nil || prev.Status != metav1.ConditionTrue || prev.Message != msg || prev.ObservedGeneration != rgd.Generation
	if r.Recorder != nil && fresh {
		for i, w := range ws {
			if i == maxWarningEvents {
				break
			}
			r.Recorder.Eventf(rgd, nil, "Warning", "GraphWarning", "Compile", "%s", fitCondition(w.String()))
		}
	}
	setCondition(st, v1alpha1.ConditionGraphAccepted, metav1.ConditionTrue, "Valid", msg, rgd.Generation)
}

// warnedMessage is acceptedMessage with ws counted and quoted, one per
// line, cut to a condition's size.
func warnedMessage(ws []graph.Warning) string {
	if len(ws) == 0 {
		return acceptedMessage
	}
	var b strings.Builder
	noun := "warnings"
	if len(ws) == 1 {
		noun = "warning"
	}
	fmt.Fprintf(&b, "%s, with %d %s:", acceptedMessage, len(ws), noun)
	for _, w := range ws {
		b.WriteString("\n")
		b.WriteString(w.String())
	}
	return fitCondition(b.String())
}
