package testing_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func TestAssetsDirSaysHowToBuildMissingBinaries(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	_, err := fgtesting.AssetsDir()
	require.ErrorIs(t, err, fgtesting.ErrAssetsMissing)
	assert.Contains(t, err.Error(), "make envtest-assets")
}

func TestAssetsDirFindsBinariesInKubebuilderAssets(t *testing.T) {
	dir := t.TempDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, bin), nil, 0o755))
	}
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	got, err := fgtesting.AssetsDir()
	require.NoError(t, err)
	assert.Equal(t, dir, got)
}

func TestAssetsDirDefaultsToTheBuildCache(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("FLEETGRAPH_CACHE", t.TempDir())
	_, err := fgtesting.AssetsDir()
	require.ErrorIs(t, err, fgtesting.ErrAssetsMissing)
	assert.Contains(t, err.Error(), filepath.Join(os.Getenv("FLEETGRAPH_CACHE"), "envtest", fgtesting.KubeVersion+"-etcd-"+fgtesting.EtcdVersion))
}
