package testing_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func TestAControllerManagerWithoutItsBinaryFailsBeforeAnyServerStarts(t *testing.T) {
	assets := t.TempDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		require.NoError(t, os.WriteFile(filepath.Join(assets, bin), nil, 0o755))
	}
	t.Setenv("KUBEBUILDER_ASSETS", assets)

	_, err := fgtesting.StartCluster("no-kcm", fgtesting.ClusterOptions{ControllerManager: true})

	require.ErrorIs(t, err, fgtesting.ErrControllerManagerMissing)
	require.ErrorContains(t, err, "hack/envtest/build.sh kube-controller-manager")
}
