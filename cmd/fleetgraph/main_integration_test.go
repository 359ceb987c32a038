//go:build integration

package main_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The built binary, run as fleetgraph and through a kubectl-fleetgraph
// symlink (how kubectl finds plugins), exits with the codes CI reads and
// names itself after how it was invoked.
func TestBinaryAsCommandAndKubectlPlugin(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fleetgraph")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	plugin := filepath.Join(dir, "kubectl-fleetgraph")
	require.NoError(t, os.Symlink("fleetgraph", plugin))

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
}
