//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// countedInstances is the size: 61 were shown while 200 existed.
const countedInstances = 200

// FleetStatus counts what the spoke holds, not what this hub reconciled:
// after a restart the counts are right although the new hub reconciles
// none of the instances (all are suspended meanwhile), and 50 of them are
// not ACTIVE.
func TestFleetStatusCountsTheSpokesInstancesAfterARestart(t *testing.T) {
	ctx := context.Background()
	fleet := fgtesting.StartFleet(t, 1)
	c := newClient(t, fleet.Spoke("spoke-1").Config)
	opts := sdk.Options{DisableRGDController: true}
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h, stop := startStoppableHub(t, fleet.Hub.Config, provider, opts)
	require.NoError(t, h.RegisterGraph(ctx, readRGD(t, "testdata/cache-rgd.yaml")))
	createWhenServed(t, c, instance(cacheGVK, "c-000", map[string]any{}))
	names := []string{"c-000"}
	for i := 1; i < countedInstances; i++ {
		names = append(names, fmt.Sprintf("c-%03d", i))
	}
	eachOf(t, names[1:], func(name string) error {
		return c.Create(ctx, instance(cacheGVK, name, map[string]any{}))
	})
	requireCounts(t, h, countedInstances, countedInstances)
	stop()

	suspend := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, contract.AnnotationReconcile, contract.ReconcileSuspended)
	eachOf(t, names, func(name string) error {
		return c.Patch(ctx, instance(cacheGVK, name, nil), client.RawPatch(types.MergePatchType, []byte(suspend)))
	})
	eachOf(t, names[:50], func(name string) error {
		return c.Status().Patch(ctx, instance(cacheGVK, name, nil),
			client.RawPatch(types.MergePatchType, []byte(`{"status":{"state":"IN_PROGRESS"}}`)))
	})

	provider2, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h2, _ := startStoppableHub(t, fleet.Hub.Config, provider2, opts)
	require.NoError(t, h2.RegisterGraph(ctx, readRGD(t, "testdata/cache-rgd.yaml")))
	requireCounts(t, h2, countedInstances, countedInstances-50)
}

// requireCounts waits until the cache graph's FleetStatus shows total
// instances, ready of them ACTIVE, on spoke-1.
func requireCounts(t *testing.T, h *sdk.Hub, total, ready int) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := h.FleetStatus("cache")
		require.Len(ct, st.Clusters, 1)
		assert.Equal(ct, [2]int{total, ready}, [2]int{st.Clusters[0].Instances, st.Clusters[0].ReadyInstances},
			"instances and ready instances")
	}, wait, tick)
}

// eachOf calls f for every name, eight at a time.
func eachOf(t *testing.T, names []string, f func(string) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	sem := make(chan struct{}, 8)
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = f(name)
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}
