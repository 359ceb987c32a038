//go:build integration

package spoke_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// boundedRGD lets an instance ask for as many children as it likes, and
// project a status as large as it likes.
const boundedRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: bounded
spec:
  schema:
    apiVersion: v1alpha1
    kind: Bounded
    spec:
      size: integer | default=1
      copies: integer | default=0
      blob: string | default=""
    status:
      copies: ${lists.range(schema.spec.copies).map(i, schema.spec.blob)}
  resources:
  - id: pieces
    forEach:
    - i: ${lists.range(schema.spec.size)}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name + "-" + string(i)}
      data:
        i: ${string(i)}
`

// spreadRGD asks for children from two resources of the same level.
const spreadRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: spread
spec:
  schema:
    apiVersion: v1alpha1
    kind: Spread
    spec:
      size: integer | default=1
  resources:
  - id: left
    forEach:
    - i: ${lists.range(schema.spec.size)}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name + "-left-" + string(i)}
  - id: right
    forEach:
    - i: ${lists.range(schema.spec.size)}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name + "-right-" + string(i)}
`

// servedWithLimits serves boundedRGD, compiled with lim, on the shared
// fleet's first spoke, in namespace bounded.
func servedWithLimits(t *testing.T, lim graph.Limits) (client.Client, *graph.Graph) {
	t.Helper()
	return servedRGDWithLimits(t, boundedRGD, "bounded", lim)
}

// servedRGDWithLimits serves the RGD doc, compiled with lim, on the shared
// fleet's first spoke, in namespace ns.
func servedRGDWithLimits(t *testing.T, doc, ns string, lim graph.Limits) (client.Client, *graph.Graph) {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), rgd))
	g, err := graph.Compile(rgd, graph.Options{Limits: lim})
	require.NoError(t, err)
	fleet := sharedFleet(t)
	s := fleet.Spokes()[0]
	c := newClient(t, s.Config)
	installCRD(t, c, g)
	createNamespace(t, c, ns)
	provider, _ := providerFor(t, ns, []*fgtesting.Cluster{s}, cacheopts.TrimCache)
	rt := startRuntime(t, fleet, provider, spoke.Config{})
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	return c, g
}

// An instance that asks for more than the graph's Limits allow goes to
// ERROR with reason LimitExceeded and a message naming the resource, the
// expression and the limit; the process lives on, and a benign instance
// of the same graph is served as before.
func TestBoundedInstancesGoToErrorAndOthersKeepWorking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Deadlines far above what the cases need: under -race on a loaded
	// machine the 2,000-copy status ran past the default 100 ms before it
	// reached MaxStatusBytes, which is the limit this test is about.
	c, g := servedWithLimits(t, graph.Limits{MaxChildren: 5, ExpressionTimeout: 10 * time.Second, InstanceTimeout: 20 * time.Second})

	require.NoError(t, c.Create(ctx, newInstance(g, "bounded", "benign", map[string]any{"size": int64(2)})))

	t.Run("lists.range of 2^40", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(g, "bounded", "huge", map[string]any{"size": int64(1) << 40})))
		limitExceeded(t, c, g, "huge", "pieces:", "lists.range", "Limits.MaxValueBytes")
	})
	t.Run("more children than MaxChildren", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, newInstance(g, "bounded", "many", map[string]any{"size": int64(6)})))
		limitExceeded(t, c, g, "many", "pieces:", "Limits.MaxChildren")
		list := &corev1.ConfigMapList{}
		require.NoError(t, c.List(ctx, list, client.InNamespace("bounded"), client.MatchingLabels{contract.LabelInstanceName: "many"}))
		assert.Empty(t, list.Items, "no child is rendered once the count is past the limit")
	})
	t.Run("a status past MaxStatusBytes", func(t *testing.T) {
		spec := map[string]any{"copies": int64(2000), "blob": strings.Repeat("x", 1024)}
		require.NoError(t, c.Create(ctx, newInstance(g, "bounded", "wordy", spec)))
		limitExceeded(t, c, g, "wordy", "status:", "Limits.MaxStatusBytes")
	})

	stateIs(t, c, g, "bounded", "benign", contract.StateActive)
	configMapData(t, c, "bounded", "benign-1", "i", "1")
}

// An instance whose resources together ask for more children than
// MaxChildren, each under it alone, writes none of them: the children of a
// level are counted before any is applied. (Counted as each resource was
// expanded, the first resources' children were applied: issue 23's
// corpus wrote 5000 ConfigMaps, for a minute and a half, before the limit
// stopped an instance asking for 300,000.)
func TestChildrenPastTheLimitAcrossResourcesAreNotApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, g := servedRGDWithLimits(t, spreadRGD, "spread", graph.Limits{MaxChildren: 5})

	require.NoError(t, c.Create(ctx, newInstance(g, "spread", "fits", map[string]any{"size": int64(2)})))
	require.NoError(t, c.Create(ctx, newInstance(g, "spread", "over", map[string]any{"size": int64(3)})))
	stateIs(t, c, g, "spread", "over", contract.StateError)
	u, err := getInstance(t, c, g, "spread", "over")
	require.NoError(t, err)
	assert.Equal(t, "LimitExceeded", readyReason(u))
	assert.Contains(t, readyMessage(u), "over the limit of 5 (Limits.MaxChildren)")
	list := &corev1.ConfigMapList{}
	require.NoError(t, c.List(ctx, list, client.InNamespace("spread"), client.MatchingLabels{contract.LabelInstanceName: "over"}))
	assert.Empty(t, list.Items, "no child of the level is applied once its children together pass the limit")

	stateIs(t, c, g, "spread", "fits", contract.StateActive)
	require.NoError(t, c.List(ctx, list, client.InNamespace("spread"), client.MatchingLabels{contract.LabelInstanceName: "fits"}))
	assert.Len(t, list.Items, 4, "an instance under the limit has all its children")
}

// limitExceeded waits until the instance is in ERROR with a Ready
// condition of reason LimitExceeded whose message says each of want.
func limitExceeded(t *testing.T, c client.Client, g *graph.Graph, name string, want ...string) {
	t.Helper()
	stateIs(t, c, g, "bounded", name, contract.StateError)
	eventually(t, func() (bool, string) {
		u, err := getInstance(t, c, g, "bounded", name)
		if err != nil {
			return false, err.Error()
		}
		reason, msg := readyReason(u), readyMessage(u)
		if reason != "LimitExceeded" {
			return false, "Ready reason " + reason + ": " + msg
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				return false, "Ready message lacks " + w + ": " + msg
			}
		}
		return true, ""
	})
}

func readyReason(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == contract.ConditionReady {
			s, _ := m["reason"].(string)
			return s
		}
	}
	return ""
}
