//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// countInstances is how many instances the restart test starts with.
const countInstances = 200

// After a restart the counts are what the spoke holds as soon as the
// instance watch has listed it, not what the new process reconciled: here
// every instance is suspended before the restart, so the new process
// reconciles none of them, and 50 of them are not ACTIVE.
func TestCountsAreTheSpokesInstancesAfterARestart(t *testing.T) {
	t.Parallel()
	fleet := sharedFleet(t)
	ctx := context.Background()
	const ns = "counted"
	g := compileAs(t, oneKindRGD, ns)
	s := fleet.Spokes()[0]
	c := newClient(t, s.Config)
	installCRD(t, c, g)
	createNamespace(t, c, ns)

	provider, clusters := providerFor(t, ns, []*fgtesting.Cluster{s}, cacheopts.TrimCache)
	cluster := clusters[0]
	rt, stop := runRuntime(t, fleet, provider, spoke.Config{})
	t.Cleanup(stop)
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	names := make([]string, countInstances)
	for i := range names {
		names[i] = fmt.Sprintf("n%03d", i)
	}
	inParallel(t, names, func(name string) error {
		return c.Create(ctx, newInstance(g, ns, name, map[string]any{}))
	})
	want := spoke.Count{Total: countInstances, Ready: countInstances, Confirmed: countInstances, Reconciled: countInstances, Counted: true}
	countsAre(t, rt, g.Name, cluster, want)
	stop()

	suspend := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, contract.AnnotationReconcile, contract.ReconcileSuspended)
	inParallel(t, names, func(name string) error {
		return c.Patch(ctx, newInstance(g, ns, name, nil), client.RawPatch(types.MergePatchType, []byte(suspend)))
	})
	inParallel(t, names[:50], func(name string) error {
		u := newInstance(g, ns, name, nil)
		return c.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(`{"status":{"state":"IN_PROGRESS"}}`)))
	})

	provider2, _ := providerFor(t, ns, []*fgtesting.Cluster{s}, cacheopts.TrimCache)
	rt2 := startRuntime(t, fleet, provider2, spoke.Config{})
	require.NoError(t, rt2.Serve(spoke.Version{Graph: g}))
	// The new runtime reconciles none of them (all suspended): what the
	// instances show counts, but none is confirmed by the version serving.
	countsAre(t, rt2, g.Name, cluster, spoke.Count{Total: countInstances, Ready: countInstances - 50, Confirmed: 0, Counted: true})

	// Deletions count at once too: a suspended instance is still deleted.
	inParallel(t, names[:10], func(name string) error {
		return c.Delete(ctx, newInstance(g, ns, name, nil))
	})
	countsAre(t, rt2, g.Name, cluster, spoke.Count{Total: countInstances - 10, Ready: countInstances - 50, Counted: true})
}

// countsAre waits until the graph's counts on cluster are want.
func countsAre(t *testing.T, rt *spoke.Runtime, graphName string, cluster multicluster.ClusterName, want spoke.Count) {
	t.Helper()
	eventually(t, func() (bool, string) {
		got := rt.Counts(graphName)[cluster]
		return got == want, fmt.Sprintf("counts %+v, want %+v", got, want)
	})
}

// inParallel calls f for every name, four at a time.
func inParallel(t *testing.T, names []string, f func(string) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	sem := make(chan struct{}, 4)
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
