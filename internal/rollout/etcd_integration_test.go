//go:build integration

package rollout

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// On a real API server, two replicas write the status of a one-wave
// rollout across 10,000 clusters, every one of them waiting on a long
// message a spoke wrote: etcd takes it, with every cluster counted. The
// same status with every waiting cluster listed in holdingBack, as the
// hub wrote it before, is refused as too large: the bounds are what keep
// such a rollout moving.
func TestATenThousandClusterStatusIsStoredByARealAPIServer(t *testing.T) {
	fleet, c := rolloutServer(t)
	ctx := context.Background()

	const n = 10000
	ro, mine, theirs := tenThousandWave(n)
	require.NoError(t, c.Create(ctx, ro.DeepCopy()))
	stored := &fgv1alpha1.GraphRollout{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ro), stored))
	stored.Status = ro.Status
	require.NoError(t, c.Status().Update(ctx, stored))

	long := "the spoke refused the CRD: " + strings.Repeat("schéma ", 60)
	refused := Observation{Revision: 1, Message: long}
	a := replicaController(c, mine, observed(mine, refused), foreigners(theirs))
	b := replicaController(c, theirs, observed(theirs, refused), foreigners(mine))
	for _, r := range []*Controller{a, b, a} {
		require.NoError(t, r.tick(ctx))
	}
	st := readStatus(t, c)
	require.Equal(t, n, len(st.Clusters))
	assert.Equal(t, int32(n), st.HoldingBackCount)
	assert.Len(t, st.HoldingBack, fgv1alpha1.MaxHoldingBackListed)
	for _, cl := range st.Clusters {
		require.NotEmpty(t, cl.Message, cl.Name)
	}
	row, err := fleet.Hub.Printed(ctx, fgv1alpha1.GroupVersion.WithResource("graphrollouts"), "", ro.Name)
	require.NoError(t, err)
	assert.Equal(t, float64(n), row["HOLDING-BACK"], "kubectl get counts them all")

	// Unbounded, as before: every waiting cluster in holdingBack, whole.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ro), stored))
	stored.Status.HoldingBack = nil
	for _, cl := range stored.Status.Clusters {
		stored.Status.HoldingBack = append(stored.Status.HoldingBack, fgv1alpha1.RolloutCluster{Name: cl.Name, Revision: 1, Message: long})
	}
	err = c.Status().Update(ctx, stored)
	require.Error(t, err, "the API server takes no object this large")
	assert.Contains(t, err.Error(), "too large")
}

// On a real API server, the most failures a 10,000-cluster rollout
// records (MaxFailedClusters, each with a long message, beside 7,999
// moved clusters) are stored. 5,000 failures, which the wave's
// maxFailures of 50% allows, fail the rollout instead, saying why: listed,
// as they were before the bound, they are refused as too large.
func TestTheMostFailuresARolloutRecordsAreStoredByARealAPIServer(t *testing.T) {
	_, c := rolloutServer(t)
	ctx := context.Background()
	var err error

	for _, failing := range []int{fgv1alpha1.MaxFailedClusters, 5000} {
		ro, all, obs := mostFailures(10000, failing)
		ro.Name = fmt.Sprint("failing-", failing)
		ro.Spec.Graph = ro.Name
		require.NoError(t, c.Create(ctx, ro.DeepCopy()))
		stored := &fgv1alpha1.GraphRollout{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ro), stored))
		stored.Status = ro.Status
		require.NoError(t, c.Status().Update(ctx, stored))
		r := replicaController(c, all, obs, nil)
		r.Hooks.Graphs = func() []string { return []string{ro.Spec.Graph} }
		require.NoError(t, r.tick(ctx))
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ro), stored))
		if failing <= fgv1alpha1.MaxFailedClusters {
			assert.Len(t, stored.Status.Failed, failing)
			assert.Len(t, stored.Status.Moved, 10000-failing-1)
			continue
		}
		assert.Equal(t, fgv1alpha1.RolloutFailed, stored.Status.Phase)
		assert.Contains(t, stored.Status.Message, "past the 2000 failures a rollout records")

		stored.Status.Phase, stored.Status.Failed = fgv1alpha1.RolloutProgressing, nil
		for _, name := range all[:failing] {
			stored.Status.Failed = append(stored.Status.Failed, fgv1alpha1.RolloutCluster{Name: name, Revision: 1, Message: longSpokeMessage[:64]})
		}
		err = c.Status().Update(ctx, stored)
		require.Error(t, err, "the API server takes no object this large")
		assert.Contains(t, err.Error(), "too large")
	}
}

// rolloutServer is a real API server serving GraphRollouts, and a client
// of it.
func rolloutServer(t *testing.T) (*fgtesting.Fleet, client.Client) {
	t.Helper()
	fleet := fgtesting.StartFleet(t, 0)
	require.NoError(t, fleet.Hub.InstallCRDs(fgv1alpha1.GraphRolloutCRD()))
	scheme := runtime.NewScheme()
	require.NoError(t, fgv1alpha1.AddToScheme(scheme))
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return fleet, c
}
