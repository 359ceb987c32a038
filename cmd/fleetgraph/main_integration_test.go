//go:build integration

package main_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The built binary, run as fleetgraph and through a kubectl-fleetgraph
// symlink (how kubectl finds plugins), exits with the codes CI reads and
// names itself after how it was invoked.
func TestBinaryAsCommandAndKubectlPlugin(t *testing.T) {
	bin := binary(t)
	dir := filepath.Dir(bin)
	plugin := filepath.Join(dir, "kubectl-fleetgraph")
	require.NoError(t, os.Symlink("fleetgraph", plugin))
	completer := filepath.Join(dir, "kubectl_complete-fleetgraph")
	require.NoError(t, os.Symlink("fleetgraph", completer))

	code := func(cmd *exec.Cmd) (string, int) {
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		require.NoError(t, err, "%s", out)
		return string(out), 0
	}
	out2, c := code(exec.Command(bin, "validate", "../../examples/quickstart/webapp.yaml"))
	assert.Equal(t, 0, c, out2)
	out2, c = code(exec.Command(bin, "validate", "internal/cli/testdata/broken.yaml"))
	assert.Equal(t, 1, c, out2)
	out2, c = code(exec.Command(bin, "validate", "--no-such-flag", "x.yaml"))
	assert.Equal(t, 2, c, out2)

	out2, c = code(exec.Command(plugin, "status", "--help"))
	assert.Equal(t, 0, c, out2)
	assert.Contains(t, out2, "kubectl fleetgraph status [RGD] [flags]")

	// kubectl 1.26+ completes plugins through kubectl_complete-<plugin>.
	out2, c = code(exec.Command(completer, "rollout", "ap"))
	assert.Equal(t, 0, c, out2)
	assert.Contains(t, out2, "approve\t")
}

// built is the binary the tests run, built once per package.
var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
	dir  string
}

// binary builds the fleetgraph command once for the package's tests.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "fleetgraph-bin-")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "fleetgraph")
		built.out, built.err = exec.Command("go", "build", "-o", built.path, ".").CombinedOutput()
	})
	require.NoError(t, built.err, "%s", built.out)
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
