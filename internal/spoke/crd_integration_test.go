//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// TestInstancesAreServedSoonAfterTheirCRDComesBack: an instance created
// after the graph's CRD was deleted and installed again is served within
// seconds, not after the instance watch's backoff. A cluster built with
// cacheopts.ReportWatchErrors learns that the kind went from the instance
// watch itself; any other cluster, from a watch of the CRDs. It measures
// time, so it does not run in parallel with other tests; its two cases,
// which mostly wait out the CRD's absence, run beside each other.
func TestInstancesAreServedSoonAfterTheirCRDComesBack(t *testing.T) {
	t.Run("reported by the instance watch", func(t *testing.T) {
		t.Parallel()
		crdComesBack(t, "crd-reported")
	})
	t.Run("seen by a watch of the CRDs", func(t *testing.T) {
		t.Parallel()
		crdComesBack(t, "crd-watched", withoutWatchReports)
	})
}

// withoutWatchReports builds a cluster's cache as a provider that does not
// add cacheopts.ReportWatchErrors would.
func withoutWatchReports(o *cluster.Options) { o.NewCache = nil }

// crdComesBack serves pairRGD as graph ns, in namespace ns.
func crdComesBack(t *testing.T, ns string, clusterOpts ...cluster.Option) {
	ctx := context.Background()
	fleet := sharedFleet(t)
	g := compileAs(t, pairRGD, ns)
	s := fleet.Spokes()[0]
	c := newClient(t, s.Config)
	installCRD(t, c, g)
	createNamespace(t, c, ns)
	provider, _ := providerFor(t, ns, []*fgtesting.Cluster{s}, append([]cluster.Option{cacheopts.TrimCache}, clusterOpts...)...)
	rt := startRuntime(t, fleet, provider, spoke.Config{})
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	require.NoError(t, c.Create(ctx, newInstance(g, ns, "before", map[string]any{})))
	stateIs(t, c, g, ns, "before", contract.StateActive)

	require.NoError(t, c.Delete(ctx, g.CRD.DeepCopy()))
	eventually(t, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(g.CRD), &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), fmt.Sprintf("CRD still there (%v)", err)
	})
	// The scenario, not a synchronisation: the CRD stays away long enough
	// for the instance watch's retries to back off (as they did for 16-30 s).
	time.Sleep(10 * time.Second)
	installCRD(t, c, g)

	var created time.Time
	eventually(t, func() (bool, string) { // the test client's own discovery may lag
		err := c.Create(ctx, newInstance(g, ns, "after", map[string]any{}))
		created = time.Now()
		return err == nil, fmt.Sprintf("create: %v", err)
	})
	eventuallyWithin(t, 3*time.Second, func() (bool, string) {
		u, err := getInstance(t, c, g, ns, "after")
		if err != nil {
			return false, err.Error()
		}
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		return state == contract.StateActive, fmt.Sprintf("state %q %s after the create", state, time.Since(created))
	})
}
