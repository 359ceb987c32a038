package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// -keep writes a merged kubeconfig with a context per cluster (and one
// file per cluster), says how to use it, returns when interrupted and
// removes the files then.
func TestKeepFleetWritesAMergedKubeconfig(t *testing.T) {
	clusters := []*fgtesting.Cluster{
		{Name: "hub", Kubeconfig: kubeconfig(t, "https://127.0.0.1:1001")},
		{Name: "spoke-1", Kubeconfig: kubeconfig(t, "https://127.0.0.1:1002")},
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	var files fgtesting.KubeconfigFiles
	err := keepFleet(ctx, &out, clusters, func(f fgtesting.KubeconfigFiles) {
		files = f
		merged, err := clientcmd.LoadFromFile(f.Merged)
		require.NoError(t, err)
		assert.Equal(t, "https://127.0.0.1:1002", merged.Clusters[merged.Contexts["spoke-1"].Cluster].Server)
		assert.FileExists(t, f.Clusters["hub"])
		cancel() // as if Ctrl-C came now
	})
	require.NoError(t, err)
	assert.Contains(t, out.String(), "export KUBECONFIG="+files.Merged)
	assert.Contains(t, out.String(), "kubectl --context spoke-1 get webapps")
	assert.Contains(t, out.String(), "gateways.yaml")
	_, err = os.Stat(files.Merged)
	assert.True(t, os.IsNotExist(err), "the kubeconfigs of a stopped fleet are removed")
}

func kubeconfig(t *testing.T, server string) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	cfg.CurrentContext = "envtest"
	raw, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return raw
}
