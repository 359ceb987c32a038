//go:build integration

package sdk_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// With a nil provider the hub cluster is also the only spoke: the RGD, the
// generated CRD, the instance and its children all live there. The hub runs
// standalone, through Run.
func TestSingleClusterModeCreateUpdateDelete(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 0) // its own: the hub cluster is the spoke, and the RGD controller claims every RGD there
	c := newClient(t, fleet.Hub.Config)
	h, err := sdk.NewHub(nil, sdk.Options{Logger: logOnFailure(t), RGDs: sdk.RGDOptions{InstallCRD: true}})
	require.NoError(t, err)
	// Run returns cleanly when its context ends, or Start fails the test.
	fgtesting.Start(t, func(ctx context.Context) error { return h.Run(ctx, fleet.Hub.Config) })
	ctx := context.Background()

	rgd := readRGD(t, "testdata/webapp-rgd.yaml")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(c.Create(ctx, rgd.DeepCopy())))
	}, wait, tick, "Run installs the RGD CRD as it starts")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, map[string]string{"": "Established 0/0"}, clusterStates(h, "webapp"))
	}, wait, tick)

	app := instance(webAppGVK, "solo", map[string]any{"name": "solo", "image": "nginx:1"})
	createWhenServed(t, c, app)
	requireState(t, c, webAppGVK, "solo", "ACTIVE")
	data, err := configMapData(c, "solo-config")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"image": "nginx:1"}, data)

	t.Run("an update reaches the children", func(t *testing.T) {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(app), app))
		require.NoError(t, unstructured.SetNestedField(app.Object, "nginx:2", "spec", "image"))
		require.NoError(t, c.Update(ctx, app))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			data, err := configMapData(c, "solo-config")
			require.NoError(ct, err)
			assert.Equal(ct, "nginx:2", data["image"])
			d := &appsv1.Deployment{}
			require.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "solo"}, d))
			assert.Equal(ct, "nginx:2", d.Spec.Template.Spec.Containers[0].Image)
		}, wait, tick)
	})

	t.Run("a delete removes the children and releases the instance", func(t *testing.T) {
		require.NoError(t, c.Delete(ctx, app))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			_, err := configMapData(c, "solo-config")
			assert.True(ct, client.IgnoreNotFound(err) == nil && err != nil, "config map gone")
			err = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "solo"}, &appsv1.Deployment{})
			assert.True(ct, client.IgnoreNotFound(err) == nil && err != nil, "deployment gone")
			err = c.Get(ctx, client.ObjectKeyFromObject(app), app.DeepCopy())
			assert.True(ct, client.IgnoreNotFound(err) == nil && err != nil, "instance gone: finalizer released")
		}, wait, tick)
	})
}
