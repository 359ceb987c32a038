//go:build integration

package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// relayRGD is a hub graph with one resource on the pull cluster edge-1.
const relayRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: relay
spec:
  schema:
    apiVersion: v1alpha1
    kind: Relay
  resources:
  - id: remote
    target:
      cluster:
        name: edge-1
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-relay
      data:
        from: hub
`

// A hub graph cannot write on a pull cluster (the hub never connects to
// one): an instance whose resource targets one goes to ERROR before
// anything is written, with a refusal that names the resource and the
// cluster and says it is a pull cluster.
func TestHubGraphsRefuseAPullClusterAsATarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := fgtesting.StartFleet(t, 0) // its own: the hub serves every PullCluster on its hub cluster
	h, _ := startHub(t, fleet.Hub.Config, fgtesting.NewProvider(), sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	join(t, fleet.Hub, "edge-1", nil)
	hub := newClient(t, fleet.Hub.Config)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		pc := &fgv1alpha1.PullCluster{}
		require.NoError(ct, hub.Get(ctx, client.ObjectKey{Name: "edge-1"}, pc))
		assert.True(ct, meta.IsStatusConditionTrue(pc.Status.Conditions, fgv1alpha1.PullClusterRegistered))
	}, wait, tick, "the pull cluster is registered")
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(relayRGD), rgd))
	require.NoError(t, h.RegisterGraph(ctx, rgd))

	gvk := gvkOf("Relay")
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace("default")
	obj.SetName("beam")
	createWhenServed(t, fleet.Hub.Config, obj)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		require.NoError(ct, hub.Get(ctx, client.ObjectKeyFromObject(obj), u))
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		assert.Equal(ct, "ERROR", state)
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		var msg string
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "TargetsAllowed" {
				assert.Equal(ct, "False", m["status"])
				msg, _ = m["message"].(string)
			}
		}
		assert.Contains(ct, msg, `resource "remote"`)
		assert.Contains(ct, msg, `cluster "edge-1"`)
		assert.Contains(ct, msg, "a pull cluster")
	}, wait, tick, "the instance is refused, naming the pull cluster")
}
