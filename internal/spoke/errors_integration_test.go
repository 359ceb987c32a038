//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// breakableRGD renders one ConfigMap whose name the API server rejects
// when spec.name is not a DNS name, and whose data divides by spec.divisor.
const breakableRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: breakable
spec:
  schema:
    apiVersion: v1alpha1
    kind: Breakable
    spec:
      name: string | default="ok"
      divisor: integer | default=1
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-${schema.spec.name}
      data:
        ratio: ${string(10 / schema.spec.divisor)}
`

func TestBadInputPutsTheInstanceInErrorUntilFixed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "breakable"
	c, g, _ := servedOnOneSpoke(t, ns, breakableRGD)

	t.Run("a child the API server rejects", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(g, ns, "rejected", map[string]any{"name": "Not_A_DNS_Name"})))
		errorNamingNode(t, c, g, ns, "rejected", "ApplyFailed", "config")
		patchSpec(t, c, g, ns, "rejected", `{"spec":{"name":"fixed"}}`)
		stateIs(t, c, g, ns, "rejected", contract.StateActive)
		configMapData(t, c, ns, "rejected-fixed", "ratio", "10")
	})

	t.Run("a CEL runtime error", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(g, ns, "divided", map[string]any{"divisor": int64(0)})))
		errorNamingNode(t, c, g, ns, "divided", "EvaluationFailed", "config")
		patchSpec(t, c, g, ns, "divided", `{"spec":{"divisor":5}}`)
		stateIs(t, c, g, ns, "divided", contract.StateActive)
		configMapData(t, c, ns, "divided-ok", "ratio", "2")
	})
}

// errorNamingNode waits until the instance is in ERROR with a Ready
// condition of the reason that names the node, and a Warning event on the
// instance saying the same.
func errorNamingNode(t *testing.T, c client.Client, g *graph.Graph, ns, name, reason, node string) {
	t.Helper()
	stateIs(t, c, g, ns, name, contract.StateError)
	readyMessageMentions(t, c, g, ns, name, node+":")
	eventually(t, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Regarding.Kind == g.Instance.GVK.Kind {
				if e.Type == "Warning" && e.Reason == reason && strings.HasPrefix(e.Note, node+":") {
					return true, ""
				}
				seen = append(seen, fmt.Sprintf("%s %s %q", e.Type, e.Reason, e.Note))
			}
		}
		return false, fmt.Sprintf("no %s event naming %s; events on the instance: %v", reason, node, seen)
	})
}
