package testing_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// fakeCluster is a cluster whose kubeconfig is written as envtest writes
// one: everything named "envtest".
func fakeCluster(t *testing.T, name, server, token string) *fgtesting.Cluster {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: []byte("ca-of-" + name)}
	cfg.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	cfg.CurrentContext = "envtest"
	raw, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return &fgtesting.Cluster{Name: name, Kubeconfig: raw}
}

// The merged kubeconfig has one context per cluster, named after it, each
// reaching that cluster with that cluster's credentials; the first
// cluster's is current.
func TestMergeKubeconfigsGivesEachClusterAContextOfItsName(t *testing.T) {
	hub := fakeCluster(t, "hub", "https://127.0.0.1:1001", "hub-token")
	spoke := fakeCluster(t, "spoke-1", "https://127.0.0.1:1002", "spoke-token")
	raw, err := fgtesting.MergeKubeconfigs(hub, spoke)
	require.NoError(t, err)
	cfg, err := clientcmd.Load(raw)
	require.NoError(t, err)
	assert.Equal(t, "hub", cfg.CurrentContext)
	assert.ElementsMatch(t, []string{"hub", "spoke-1"}, keys(cfg.Contexts))
	for name, want := range map[string]struct{ host, token, ca string }{
		"hub":     {"https://127.0.0.1:1001", "hub-token", "ca-of-hub"},
		"spoke-1": {"https://127.0.0.1:1002", "spoke-token", "ca-of-spoke-1"},
	} {
		rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		require.NoError(t, err, name)
		assert.Equal(t, want.host, rc.Host, name)
		assert.Equal(t, want.token, rc.BearerToken, name)
		assert.Equal(t, want.ca, string(rc.CAData), name)
	}

	_, err = fgtesting.MergeKubeconfigs(hub, fakeCluster(t, "hub", "https://127.0.0.1:1003", "other"))
	assert.ErrorIs(t, err, fgtesting.ErrDuplicateCluster)
	_, err = fgtesting.MergeKubeconfigs()
	assert.Error(t, err)
}

// WriteKubeconfigs writes the merged file and one file per cluster, whose
// context is named after the cluster too (so that KUBECONFIG=a:b works),
// readable by the owner only.
func TestWriteKubeconfigsWritesMergedAndPerClusterFiles(t *testing.T) {
	dir := t.TempDir()
	hub := fakeCluster(t, "hub", "https://127.0.0.1:1001", "hub-token")
	spoke := fakeCluster(t, "spoke-1", "https://127.0.0.1:1002", "spoke-token")
	files, err := fgtesting.WriteKubeconfigs(dir, hub, spoke)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, fgtesting.MergedKubeconfigFile), files.Merged)
	assert.Equal(t, map[string]string{
		"hub":     filepath.Join(dir, "hub.kubeconfig"),
		"spoke-1": filepath.Join(dir, "spoke-1.kubeconfig"),
	}, files.Clusters)
	for _, path := range append([]string{files.Merged}, files.Clusters["hub"], files.Clusters["spoke-1"]) {
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s holds credentials: owner only", path)
	}
	own, err := clientcmd.LoadFromFile(files.Clusters["spoke-1"])
	require.NoError(t, err)
	assert.Equal(t, "spoke-1", own.CurrentContext)
	assert.Equal(t, []string{"spoke-1"}, keys(own.Contexts))
	assert.Equal(t, "https://127.0.0.1:1002", own.Clusters["spoke-1"].Server)

	rc, err := files.RESTConfig("spoke-1")
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:1002", rc.Host)
	assert.Equal(t, "spoke-token", rc.BearerToken)
	_, err = files.RESTConfig("spoke-9")
	assert.ErrorContains(t, err, `no context "spoke-9"`)

	_, err = fgtesting.WriteKubeconfigs(t.TempDir(), fakeCluster(t, "../up", "https://127.0.0.1:1", "x"))
	assert.Error(t, err, "a cluster name is never a path")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
