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
	t.Parallel()
	ctx := context.Background()
	fleet := sharedFleet(t)
	spoke := fleet.Spoke("spoke-1")
	c := newClient(t, spoke.Config)
	opts := sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}}
	rgd, gvk := renamedRGD(readRGD(t, "testdata/cache-rgd.yaml"), "counted", "CountedCache")
	h, stop := startStoppableHub(t, fleet.Hub.Config, spokeProvider(t, spoke), opts)
	require.NoError(t, h.RegisterGraph(ctx, rgd.DeepCopy()))
	names := make([]string, countedInstances)
	for i := range names {
		names[i] = fmt.Sprintf("counted-%03d", i)
	}
	createWhenServed(t, c, instance(gvk, names[0], map[string]any{}))
	eachOf(t, names[1:], func(name string) error {
		return c.Create(ctx, instance(gvk, name, map[string]any{}))
	})
	requireCounts(t, h, rgd.Name, countedInstances, countedInstances)
	stop()

	suspend := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, contract.AnnotationReconcile, contract.ReconcileSuspended)
	eachOf(t, names, func(name string) error {
		return c.Patch(ctx, instance(gvk, name, nil), client.RawPatch(types.MergePatchType, []byte(suspend)))
	})
	eachOf(t, names[:50], func(name string) error {
		return c.Status().Patch(ctx, instance(gvk, name, nil),
			client.RawPatch(types.MergePatchType, []byte(`{"status":{"state":"IN_PROGRESS"}}`)))
	})

	h2, _ := startStoppableHub(t, fleet.Hub.Config, spokeProvider(t, spoke), opts)
	require.NoError(t, h2.RegisterGraph(ctx, rgd.DeepCopy()))
	requireCounts(t, h2, rgd.Name, countedInstances, countedInstances-50)
}

// spokeProvider returns a provider that engages only the given spoke.
func spokeProvider(t *testing.T, spoke *fgtesting.Cluster) *fgtesting.Provider {
	t.Helper()
	p := fgtesting.NewProvider()
	require.NoError(t, p.AddConfig(context.Background(), spoke.Name, spoke.Config))
	return p
}

// requireCounts waits until the graph's FleetStatus shows total instances,
// ready of them ACTIVE, on its one cluster.
func requireCounts(t *testing.T, h *sdk.Hub, graph string, total, ready int) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := h.FleetStatus(graph)
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
