package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// -keep writes one private kubeconfig per cluster into a directory it
// prints, and returns when interrupted.
func TestExploreWritesAKubeconfigPerCluster(t *testing.T) {
	clusters := []*fgtesting.Cluster{
		{Name: "hub", Kubeconfig: []byte("hub-config")},
		{Name: "spoke-1", Kubeconfig: []byte("spoke-config")},
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as if Ctrl-C came at once
	var out bytes.Buffer
	require.NoError(t, explore(ctx, &out, clusters))

	m := regexp.MustCompile(`Kubeconfigs are in (\S+)\.`).FindStringSubmatch(out.String())
	require.Len(t, m, 2, out.String())
	t.Cleanup(func() { _ = os.RemoveAll(m[1]) })
	for _, c := range clusters {
		path := filepath.Join(m[1], c.Name+".kubeconfig")
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, c.Kubeconfig, got)
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "credentials are readable by the owner only")
	}
	assert.Contains(t, out.String(), "kubectl --kubeconfig "+filepath.Join(m[1], "hub.kubeconfig"))
}
