//go:build integration

package testing_test

import (
	"os"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func TestKCPServesWorkspacesAndStopsCleanly(t *testing.T) {
	t.Parallel() // kcp takes ~30 s to start: the package's other tests run meanwhile
	start := time.Now()
	k, err := fgtesting.NewKCP(fgtesting.KCPOptions{})
	require.NoError(t, err)
	t.Logf("kcp ready in %s", time.Since(start).Round(time.Millisecond))
	root := logicalcluster.NewPath("root")

	start = time.Now()
	name, err := k.CreateWorkspace(t.Context(), root, "team")
	require.NoError(t, err)
	t.Logf("workspace ready in %s", time.Since(start).Round(time.Millisecond))
	assert.NotEmpty(t, name)

	for _, path := range []logicalcluster.Path{root.Join("team"), name.Path()} {
		cs, err := kubernetes.NewForConfig(k.ConfigFor(path))
		require.NoError(t, err)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello-" + string(name)[:4]}}
		_, err = cs.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{})
		if path == root.Join("team") {
			require.NoError(t, err, "a workspace is reachable by path")
		} else {
			require.Error(t, err, "the same workspace by name already has it")
			_, err = cs.CoreV1().ConfigMaps("default").Get(t.Context(), cm.Name, metav1.GetOptions{})
			require.NoError(t, err, "a workspace is reachable by logical cluster name")
		}
	}

	require.NoError(t, k.DeleteWorkspace(t.Context(), root, "team"))
	require.NoError(t, k.Stop())
	assert.NoDirExists(t, k.RootDir)
	require.NoError(t, k.Stop(), "Stop is idempotent")
}

func TestKCPBinaryMissingSaysHowToBuildIt(t *testing.T) {
	t.Setenv("KCP_BINARY", "/nonexistent/kcp")
	_, err := fgtesting.KCPBinary()
	require.ErrorIs(t, err, fgtesting.ErrKCPMissing)
	assert.Contains(t, err.Error(), "hack/kcp/build.sh")
	_, statErr := os.Stat("/nonexistent/kcp")
	assert.Error(t, statErr)
}
