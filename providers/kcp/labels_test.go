package kcp

import (
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// A workspace's cluster.fleetgraph.dev/ labels are its cluster's labels, as
// the secret provider reads them from Secrets, and follow relabelling.
func TestWorkspaceLabelsAreClusterLabels(t *testing.T) {
	p, err := New(&rest.Config{Host: "https://kcp"}, logicalcluster.NewPath("root:org"), Options{})
	require.NoError(t, err)
	informer := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
	p.watchers["root:org"] = &watcher{informer: informer}
	p.paths[logicalcluster.Name("2ju5dn8ugkvm1tyr")] = logicalcluster.NewPath("root:org:team")

	ws := &unstructured.Unstructured{}
	ws.SetName("team")
	ws.SetLabels(map[string]string{"cluster.fleetgraph.dev/region": "eu", "other": "x", "cluster.fleetgraph.dev/": "empty"})
	require.NoError(t, informer.GetStore().Add(ws))
	assert.Equal(t, map[string]string{"region": "eu"}, p.Labels("2ju5dn8ugkvm1tyr"))

	ws = ws.DeepCopy()
	ws.SetLabels(map[string]string{"cluster.fleetgraph.dev/region": "us"})
	require.NoError(t, informer.GetStore().Update(ws))
	assert.Equal(t, map[string]string{"region": "us"}, p.Labels("2ju5dn8ugkvm1tyr"))

	assert.Nil(t, p.Labels("unknown"), "a cluster not engaged has no labels")
}
