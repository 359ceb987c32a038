package keep_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fleetgraph/fleetgraph/examples/internal/keep"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A kept fleet gets a merged kubeconfig with a context per cluster (and a
// file per cluster), the commands to try with it, and returns when
// interrupted, removing the files, whose clusters are about to stop.
func TestFleetWritesAMergedKubeconfigAndWaits(t *testing.T) {
	clusters := []*fgtesting.Cluster{
		{Name: "hub", Kubeconfig: kubeconfig(t, "https://127.0.0.1:1001")},
		{Name: "spoke-1", Kubeconfig: kubeconfig(t, "https://127.0.0.1:1002")},
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	var files fgtesting.KubeconfigFiles
	err := keep.Fleet(ctx, &out, clusters, keep.Options{
		Demo:  "test",
		Kept:  " and its widget",
		Try:   []string{"kubectl --context spoke-1 get widgets"},
		Notes: []string{"Widgets may be anywhere."},
		OnKept: func(f fgtesting.KubeconfigFiles) {
			files = f
			rc, err := f.RESTConfig("spoke-1")
			require.NoError(t, err)
			assert.Equal(t, "https://127.0.0.1:1002", rc.Host)
			assert.FileExists(t, f.Clusters["hub"])
			cancel() // as if Ctrl-C came now
		},
	})
	require.NoError(t, err)
	text := out.String()
	assert.Contains(t, text, "==> Kept running: the fleet and its widget. "+files.Merged+" has a context per cluster (hub, spoke-1)")
	assert.Contains(t, text, "    export KUBECONFIG="+files.Merged+"\n    kubectl --context spoke-1 get widgets\n")
	assert.Contains(t, text, "==> Widgets may be anywhere.")
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
