//go:build integration

package sdk_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk"
)

// A compatible update that adds a field with a default reaches the
// instances that exist already, as in kro: the API server defaults them on
// read, so the runtime must not go on evaluating the copies its watch held
// from before the field existed ("no such key").
func TestAnAddedDefaultReachesExistingInstances(t *testing.T) {
	t.Parallel()
	fleet := sharedFleet(t)
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	ctx := context.Background()
	c := newClient(t, fleet.Spoke("spoke-1").Config)

	paint, gvk := renamedRGD(rgdFromString(t, paintRGD), "shade", "Shade")
	require.NoError(t, h.RegisterGraph(ctx, paint))
	createWhenServed(t, c, instance(gvk, "shade-old", map[string]any{"color": "blue"}))
	requireState(t, c, gvk, "shade-old", "ACTIVE")

	shaded := strings.Replace(paintRGD, `finish: string | default="matte"`,
		`finish: string | default="matte"
      shade: string | default="light"`, 1)
	shaded = strings.Replace(shaded, "generation: 1", "generation: 2", 1)
	shaded = strings.Replace(shaded, "color: ${schema.spec.color}\n",
		"color: ${schema.spec.color}\n        shade: ${schema.spec.shade}\n", 1)
	shadedRGD, _ := renamedRGD(rgdFromString(t, shaded), paint.Name, gvk.Kind)
	require.NoError(t, h.RegisterGraph(ctx, shadedRGD))

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		data, err := configMapData(c, "shade-old-paint")
		require.NoError(ct, err)
		assert.Equal(ct, "light", data["shade"], "the new default reached the existing instance's child")
		assert.Equal(ct, "ACTIVE", state(c, gvk, "shade-old"))
	}, wait, tick)
}
