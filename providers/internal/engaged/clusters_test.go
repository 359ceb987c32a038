package engaged

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

func TestRateLimitsApplyOnlyWhereTheConfigurationHasNone(t *testing.T) {
	c := New(Options{QPS: 7, Burst: 9, Log: logr.Discard()})
	got := c.withLimits(&rest.Config{})
	assert.Equal(t, float32(7), got.QPS)
	assert.Equal(t, 9, got.Burst)
	got = c.withLimits(&rest.Config{QPS: 1, Burst: 2})
	assert.Equal(t, float32(1), got.QPS)
	assert.Equal(t, 2, got.Burst)
}

func TestTheFirstObjectToClaimANameHoldsIt(t *testing.T) {
	c := claims{byName: map[multicluster.ClusterName]types.NamespacedName{}}
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}

	_, released, ok := c.claim(a, "eu")
	assert.True(t, ok)
	assert.Empty(t, released)
	holder, _, ok := c.claim(b, "eu")
	assert.False(t, ok)
	assert.Equal(t, a, holder)

	_, released, ok = c.claim(a, "us")
	assert.True(t, ok, "a renames its cluster")
	assert.Equal(t, []multicluster.ClusterName{"eu"}, released)
	_, _, ok = c.claim(b, "eu")
	assert.True(t, ok, "eu is free again")

	assert.Equal(t, []multicluster.ClusterName{"us"}, c.release(a))
	assert.Empty(t, c.release(a))
}

func TestGetOfAnUnknownClusterWrapsErrClusterNotFound(t *testing.T) {
	c := New(Options{Log: logr.Discard()})
	_, err := c.Get(t.Context(), "nope")
	assert.ErrorIs(t, err, multicluster.ErrClusterNotFound)
	assert.Nil(t, c.Labels("nope"))
	assert.False(t, c.Registered("nope"))
	assert.Empty(t, c.ClusterNames())
}

// The providers' clusters pass the coordinator's Release and Acquire on
// to the lazy cluster beneath: without Release a replica would keep
// running what it stopped serving; without Acquire a cluster handed back
// to it would never be built again.
func TestAProviderClusterIsReleasedAndAcquiredForTheCoordinator(t *testing.T) {
	c := New(Options{Log: logr.Discard()})
	tc, err := c.newCluster(&rest.Config{Host: "https://127.0.0.1:1"})
	require.NoError(t, err)
	lazy, ok := tc.Cluster.(interface{ Used() bool })
	require.True(t, ok)

	tc.GetClient()
	assert.True(t, lazy.Used(), "built at its first use")
	tc.Release()
	assert.False(t, lazy.Used(), "released")
	tc.GetClient()
	assert.False(t, lazy.Used(), "a use before it is acquired again builds nothing that is kept")
	tc.Acquire()
	tc.GetClient()
	assert.True(t, lazy.Used(), "acquired, its next use builds it again")
}
