package engaged

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
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
