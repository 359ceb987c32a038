//go:build integration

package sdk_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A spoke that leaves the fleet is cleaned up while it can still be
// reached: its admission policy goes and its instances are released, so a
// delete there finishes without the hub, and their children stay. A spoke
// that comes back within the grace period (a rotated kubeconfig) keeps
// being served and is not touched.
func TestASpokeThatLeavesTheFleetIsCleanedUp(t *testing.T) {
	const grace = time.Second
	ctx := context.Background()
	gvk := schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "WebApp"}
	fleet := fgtesting.StartFleet(t, 2)
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{DisableRGDController: true, DepartureGrace: grace})
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "testdata/webapp-rgd.yaml")))
	leaving, staying := newClient(t, fleet.Spoke("spoke-2").Config), newClient(t, fleet.Spoke("spoke-1").Config)
	for _, c := range []client.Client{leaving, staying} {
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"name": "app"}))
		requireState(t, c, gvk, "app", "ACTIVE")
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NotEmpty(ct, policies(ct, c, "webapp"))
		}, wait, tick, "the policy is bound before the spoke leaves")
	}

	t.Run("a spoke that leaves is released", func(t *testing.T) {
		provider.Remove("spoke-2")
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Empty(ct, policies(ct, leaving, "webapp"))
			assert.False(ct, holdsFinalizer(ct, leaving, gvk, "app"))
		}, wait, tick)
		requireDeleted(t, leaving, instance(gvk, "app", nil))
		_, err := configMapData(leaving, "app-config")
		assert.NoError(t, err, "the children of a released instance stay")
	})

	t.Run("a spoke that comes back at once is not touched", func(t *testing.T) {
		provider.Remove("spoke-1")
		require.NoError(t, provider.AddConfig(ctx, "spoke-1", fleet.Spoke("spoke-1").Config))
		require.Never(t, func() bool {
			return !holdsFinalizer(t, staying, gvk, "app") || len(policies(t, staying, "webapp")) == 0
		}, 3*grace, tick, "a rotation is not a departure")
		requireState(t, staying, gvk, "app", "ACTIVE")
	})
}

func holdsFinalizer(t require.TestingT, c client.Client, gvk schema.GroupVersionKind, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u))
	return slices.Contains(u.GetFinalizers(), spoke.Finalizer)
}
