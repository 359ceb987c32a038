//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func TestCreatesSucceedAsSoonAsTheGraphIsServed(t *testing.T) {
	t.Parallel()
	fleet := sharedFleet(t)
	provider, err := fleet.NewProvider(context.Background())
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	ctx := context.Background()
	rgd, gvk := renamedRGD(readRGD(t, "testdata/webapp-rgd.yaml"), "early-webapp", "EarlyWebApp")

	// A client that knows the kind without discovery, so that its creates
	// reach the API server the moment the graph is reported served.
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	c, err := client.New(fleet.Spoke("spoke-1").Config, client.Options{Scheme: fgtesting.NewScheme(), Mapper: mapper})
	require.NoError(t, err)

	require.NoError(t, h.RegisterGraph(ctx, rgd))
	require.Eventually(t, func() bool {
		for _, s := range h.FleetStatus(rgd.Name).Clusters {
			if s.Cluster == "spoke-1" && s.CRD.Healthy() {
				return true
			}
		}
		return false
	}, wait, time.Millisecond, "the graph is served on spoke-1")
	for i := range 5 {
		name := fmt.Sprintf("early-%d", i)
		require.NoError(t, c.Create(ctx, instance(gvk, name, map[string]any{"name": name})),
			"create %d after the graph was reported served", i)
	}
	for i := range 5 {
		requireState(t, c, gvk, fmt.Sprintf("early-%d", i), "ACTIVE")
	}

	// The policy is bound once the API server can run it: new instances
	// then come back from their create stamped.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		probe := instance(gvk, "early-probe", map[string]any{"name": "early-probe"})
		require.NoError(ct, c.Create(ctx, probe, client.DryRunAll))
		assert.Contains(ct, probe.GetFinalizers(), contract.Finalizer)
	}, wait, tick)
}
