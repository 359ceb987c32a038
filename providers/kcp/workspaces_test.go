package kcp

import (
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

func TestNewRequiresAConfigAndAParent(t *testing.T) {
	_, err := New(nil, logicalcluster.NewPath("root"), Options{})
	assert.Error(t, err)
	_, err = New(&rest.Config{Host: "https://kcp"}, logicalcluster.Path{}, Options{})
	assert.Error(t, err)
}

func TestNewFillsDocumentedDefaults(t *testing.T) {
	p, err := New(&rest.Config{Host: "https://kcp"}, logicalcluster.NewPath("root"), Options{})
	require.NoError(t, err)
	assert.Equal(t, DefaultWorkers, p.opts.Workers)
	assert.Equal(t, DefaultCacheSyncTimeout, p.opts.CacheSyncTimeout)
	assert.False(t, p.opts.Recursive)
}

func TestClusterRequestsGoToTheLogicalCluster(t *testing.T) {
	for _, host := range []string{"https://kcp:6443", "https://kcp:6443/", "https://kcp:6443/clusters/root:org"} {
		p, err := New(&rest.Config{Host: host, BearerToken: "t"}, logicalcluster.NewPath("root:org"), Options{})
		require.NoError(t, err)
		cfg := p.configFor(logicalcluster.Name("2ju5dn8ugkvm1tyr").Path())
		assert.Equal(t, "https://kcp:6443/clusters/2ju5dn8ugkvm1tyr", cfg.Host, host)
		assert.Equal(t, "t", cfg.BearerToken)
	}
}

func TestUnknownClustersAreNotFound(t *testing.T) {
	p, err := New(&rest.Config{Host: "https://kcp"}, logicalcluster.NewPath("root"), Options{})
	require.NoError(t, err)
	_, err = p.Get(t.Context(), "nope")
	assert.ErrorIs(t, err, multicluster.ErrClusterNotFound)
	assert.True(t, p.Path("nope").Empty())
	assert.Empty(t, p.ClusterNames())
}

func TestWorkspaceKeyPathJoinsParentAndName(t *testing.T) {
	k := workspaceKey{parent: "root:org", name: "team"}
	assert.Equal(t, "root:org:team", k.path().String())
}
