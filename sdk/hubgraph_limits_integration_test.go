//go:build integration

package sdk_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

var (
	fanGVK  = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Fan"}
	blobGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Blob"}
)

// fanRGD writes count ConfigMaps, alternately on spoke-1 and spoke-2: a
// forEach whose target is read from its iterator.
const fanRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: fan
spec:
  schema:
    apiVersion: v1alpha1
    kind: Fan
    spec:
      count: integer
  resources:
  - id: copies
    forEach:
    - i: ${lists.range(schema.spec.count)}
    target:
      cluster:
        name: '${["spoke-1", "spoke-2"][i % 2]}'
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name + "-" + string(i)}
`

// blobRGD writes count copies of the instance's blob on spoke-1.
const blobRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: blob
spec:
  schema:
    apiVersion: v1alpha1
    kind: Blob
    spec:
      count: integer
      blob: string
  resources:
  - id: copies
    forEach:
    - i: ${lists.range(schema.spec.count)}
    target:
      cluster:
        name: spoke-1
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name + "-" + string(i)}
      data:
        blob: ${schema.spec.blob}
`

// The spoke runtime's limits (sdk.Options.Compile.Limits) hold for hub graphs: a
// tenant's forEach over too many targets goes to ERROR naming
// Limits.MaxChildren with nothing written anywhere, one rendering too many
// bytes goes to ERROR naming Limits.MaxRenderedBytes, and another
// instance of each graph becomes ACTIVE all the same.
func TestHubGraphTenantLimits(t *testing.T) {
	t.Parallel()
	opts := meshOnly()
	opts.Compile.Limits = graph.Limits{MaxChildren: 50, MaxRenderedBytes: 1 << 20}
	f, _, _ := startHubGraphFleet(t, opts, fanRGD, blobRGD)
	ctx := context.Background()

	createWhenServed(t, f.hub, instance(fanGVK, "wide", map[string]any{"count": int64(900)}))
	createWhenServed(t, f.hub, instance(blobGVK, "huge", map[string]any{"count": int64(10), "blob": strings.Repeat("x", 300_000)}))
	createWhenServed(t, f.hub, instance(fanGVK, "calm", map[string]any{"count": int64(4)}))
	createWhenServed(t, f.hub, instance(blobGVK, "small", map[string]any{"count": int64(2), "blob": "x"}))

	requireLimit := func(gvk schema.GroupVersionKind, name string, says ...string) {
		t.Helper()
		u := requireSays(t, f.hub, gvk, name, instanceSays{State: "ERROR", Condition: "Ready", Reason: "LimitExceeded", Message: says},
			"%s goes to ERROR naming the limit", name)
		t.Logf("%s: %v", name, condition(u, "Ready")["message"])
	}
	requireLimit(fanGVK, "wide", "Limits.MaxChildren", "over the limit of 50")
	f.requireNowhere(t, "wide")
	requireLimit(blobGVK, "huge", `resource "copies"`, "Limits.MaxRenderedBytes")

	requireState(t, f.hub, fanGVK, "calm", "ACTIVE")
	requireState(t, f.hub, blobGVK, "small", "ACTIVE")
	for cluster, want := range map[string][]string{"spoke-1": {"calm-0", "calm-2", "small-0", "small-1"}, "spoke-2": {"calm-1", "calm-3"}} {
		list := &corev1.ConfigMapList{}
		require.NoError(t, f.spokes[cluster].List(ctx, list, client.InNamespace("default")))
		var got []string
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "calm-") || strings.HasPrefix(cm.Name, "small-") {
				got = append(got, cm.Name)
			}
		}
		assert.ElementsMatch(t, want, got, "children in %s", cluster)
	}
}
