//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// An RGD with its own status.conditions, in the shape of kro's docs: one
// condition read from a child, one composed from kro's built-in
// ResourcesReady through runtime.condition.
const authorConditionsRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: authored
spec:
  schema:
    apiVersion: v1alpha1
    kind: Authored
    spec:
      ready: string | default="no"
      withExtra: boolean | default=true
    status:
      extra: ${extra.data.v}
      conditions:
      - "${runtime.newCondition({type: 'AppReady', status: config.data.ready == 'yes' ? 'True' : 'False', reason: 'FromConfig', message: 'config says ' + config.data.ready})}"
      - "${runtime.newCondition({type: 'Ready', status: runtime.condition(schema, 'ResourcesReady').status, reason: 'Composed', message: ''})}"
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}
      data:
        ready: ${schema.spec.ready}
  - id: extra
    includeWhen:
    - ${schema.spec.withExtra}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-extra
      data:
        v: there
`

// With author conditions only those are shown, as in kro; kro's own
// conditions feed them; and the status is written fresh each time.
func TestAuthorConditionsReplaceTheBuiltIns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "authored"
	c, g, _ := servedOnOneSpoke(t, ns, authorConditionsRGD)
	require.NoError(t, c.Create(ctx, newInstance(g, ns, "a", map[string]any{"ready": "no"})))

	conditionsAre(t, c, g, ns, "a", map[string]string{"AppReady": "False", "Ready": "True"})
	statusFieldIs(t, c, g, ns, "a", "extra", "there")
	patchSpec(t, c, g, ns, "a", `{"spec":{"ready":"yes"}}`)
	conditionsAre(t, c, g, ns, "a", map[string]string{"AppReady": "True", "Ready": "True"})
	stateIs(t, c, g, ns, "a", "ACTIVE")

	// The extra ConfigMap is excluded: the field that read it cannot be
	// evaluated any more, and kro's fresh status drops it.
	patchSpec(t, c, g, ns, "a", `{"spec":{"withExtra":false}}`)
	gone(t, c, ns, "a-extra")
	statusFieldIs(t, c, g, ns, "a", "extra", "")
}

// statusFieldIs waits until status.<field> is want ("" for absent).
func statusFieldIs(t *testing.T, c client.Client, g *graph.Graph, ns, name, field, want string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		inst, err := getInstance(t, c, g, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got, _, _ := unstructured.NestedString(inst.Object, "status", field)
		return got == want, fmt.Sprintf("status.%s is %q, want %q", field, got, want)
	})
}

// conditionsAre waits until the instance shows exactly these condition
// types with these statuses.
func conditionsAre(t *testing.T, c client.Client, g *graph.Graph, ns, name string, want map[string]string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		inst, err := getInstance(t, c, g, ns, name)
		if err != nil {
			return false, err.Error()
		}
		list, _, _ := unstructured.NestedSlice(inst.Object, "status", "conditions")
		got := map[string]string{}
		for _, item := range list {
			m := item.(map[string]any)
			got[m["type"].(string)] = m["status"].(string)
		}
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("conditions %v, want %v", got, want)
	})
}
