//go:build integration && unix

package main_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bounds a hostile input must end within (issue 38): one clear line, exit
// code 1 or 2, in 2 s and under 256 MiB of peak RSS.
const (
	hostileTime = 2 * time.Second
	hostileRSS  = 256 << 20
)

// endless is standard input that never ends: `yes | fleetgraph validate -`.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "y\n"[i%2]
	}
	return len(p), nil
}

// Each input that once took the command down (a Go out-of-memory with a
// goroutine dump, or a read that never ends) is refused with one line
// that says why, fast and small, by the built binary.
func TestHostileInputEndsWithOneClearLine(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(100<<20)) // 100 MB
	require.NoError(t, f.Close())
	tree := filepath.Join(dir, "rgds")
	require.NoError(t, os.Mkdir(tree, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "ok.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o644))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(tree, "zero.yaml")))
	dense := filepath.Join(dir, "dense.yaml") // within the size cap, a node every 4 bytes
	require.NoError(t, os.WriteFile(dense, append([]byte("apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: x}\nspec:\n  resources:\n"),
		bytes.Repeat([]byte("  - a\n"), (16<<20-100)/6)...), 0o644))
	fifo := filepath.Join(dir, "fifo.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	fifoTree := filepath.Join(dir, "fifos")
	require.NoError(t, os.Mkdir(fifoTree, 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(fifoTree, "x.yaml"), 0o644))

	for _, c := range []struct {
		name  string
		args  []string
		stdin any
		line  string
	}{
		{"a device", []string{"validate", "/dev/zero"}, nil,
			"error: /dev/zero: not a regular file (a character device)"},
		{"endless standard input", []string{"validate", "-"}, endless{},
			"error: standard input: more than 16 MiB: larger than the limit of 16 MiB (--max-bytes raises it)"},
		{"a 100 MB file", []string{"validate", big}, nil,
			"error: " + big + ": 100 MiB, larger than the limit of 16 MiB (--max-bytes raises it)"},
		{"a symbolic link to a device in a directory", []string{"validate", tree}, nil,
			"error: " + filepath.Join(tree, "zero.yaml") + ": a symbolic link out of the directory given (it leads to /dev/zero) (--follow-symlinks follows it)"},
		{"the same, followed", []string{"validate", "--follow-symlinks", tree}, nil,
			"error: " + filepath.Join(tree, "zero.yaml") + ": not a regular file (a character device)"},
		{"16 MiB of dense YAML", []string{"validate", dense}, nil,
			"error: " + dense + ":1: more YAML structure than a document may hold (over 64000 tokens, such as line breaks and , [ { - :)"},
		{"a FIFO", []string{"validate", fifo}, nil,
			"error: " + fifo + ": not a regular file (a FIFO)"},
		{"a FIFO in a directory", []string{"validate", fifoTree}, nil,
			"error: " + filepath.Join(fifoTree, "x.yaml") + ": not a regular file (a FIFO)"},
		{"a device as CRDs", []string{"validate", "--schemas-from", "/dev/zero", "../../examples/quickstart/webapp.yaml"}, nil,
			"error: --schemas-from: /dev/zero: not a regular file (a character device)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang fails, not the suite
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, c.args...)
			if r, ok := c.stdin.(endless); ok {
				cmd.Stdin = r
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "exits with an error code: %v\n%s", err, stderr.String())
			assert.Contains(t, []int{1, 2}, ee.ExitCode())
			assert.Empty(t, stdout.String())
			assert.Equal(t, c.line+"\n", stderr.String(), "one clear line")
			// The bound is on the CPU the command spent, which load on
			// the machine does not inflate; the wall time is logged (on a
			// quiet machine it is the same bound), and a hang still fails
			// at the context's 30 s.
			cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			assert.Less(t, cpu, hostileTime, "ends in time: %s of CPU", cpu)
			// KiB on Linux. A child's peak may include what the test
			// process held when it forked: an upper bound.
			rss := int64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) << 10
			assert.Less(t, rss, int64(hostileRSS), "peak RSS %d MiB", rss>>20)
			t.Logf("%s: exit %d in %s (%s of CPU), peak RSS %d MiB", c.name, ee.ExitCode(), took.Round(time.Millisecond), cpu.Round(time.Millisecond), rss>>20)
		})
	}
}

// An RGD whose expression and names carry terminal escape sequences and
// bidirectional controls is reported with them escaped: it cannot clear
// the screen, recolour or reorder the verdict a CI log shows.
func TestEscapeSequencesInAnRGDArePrintedEscaped(t *testing.T) {
	bin := binary(t)
	rgd := filepath.Join(t.TempDir(), "evil.yaml")
	require.NoError(t, os.WriteFile(rgd, []byte(`apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: evil
spec:
  schema:
    apiVersion: v1alpha1
    kind: Evil
    spec:
      name: string
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: x
      data:
        "\e[2J\e[Hall valid\u202e": "${schema.spec.nope + '\e]0;pwned\a\e[8m'}"
`), 0o644))
	for _, args := range [][]string{{"validate", rgd}, {"validate", "-o", "json", rgd}, {"generate", "crd", rgd}, {"diagram", rgd}} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "%v: the RGD is invalid", args)
		all := stdout.String() + stderr.String()
		assert.NotContains(t, all, "\x1b", "%v: no raw escape", args)
		assert.NotContains(t, all, "\a", "%v", args)
		assert.NotContains(t, all, "\u202e", "%v", args)
		// The compiler quotes the key as Go does; the rest is escaped
		// where it is written.
		key := `\x1b[2J\x1b[Hall valid\u202e`
		if args[1] == "-o" {
			key = strings.ReplaceAll(key, `\`, `\\`) // and JSON escapes the backslashes
		}
		assert.Contains(t, all, key, "%v: the key, escaped", args)
		assert.Contains(t, all, `\u001b]0;pwned\u0007\u001b[8m`, "%v: the expression, escaped", args)
		if args[1] != "-o" {
			for _, line := range strings.Split(strings.TrimSpace(all), "\n") {
				if strings.Contains(line, "nope") {
					assert.Contains(t, line, `evil.yaml:18: resource "config"`, "%v: still one line, at its resource", args)
				}
			}
		}
	}
}
