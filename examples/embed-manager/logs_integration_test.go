//go:build integration

package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// neverSet is what controller-runtime prints, with a stack trace, the
// first time anything logs 30 s or more after the program started when
// no logger was set: every controller's work queue asks whether its
// debug level is enabled every 10 s, so any manager running a controller
// for over 30 s without ctrl.SetLogger prints it.
const neverSet = "log.SetLogger(...) was never called"

// The example program, run as a user runs it against a real hub, sets
// controller-runtime's logger: past controller-runtime's 30 s mark its
// controllers still log (at --zap-log-level=5 the work queues' periodic
// state shows), and stderr never has the "never called" stack trace.
func TestTheEmbeddingProgramSetsUpLogging(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 0)
	files, err := fgtesting.WriteKubeconfigs(t.TempDir(), fleet.Hub)
	require.NoError(t, err)

	cmd := exec.Command(os.Args[0], "-kubeconfig", files.Merged, "-metrics-bind-address", "0", "-zap-log-level", "5")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	started := time.Now()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})

	// lateLog: a controller logged after the 30 s mark (plus a second of
	// slack for the process start), which it does only through a logger
	// that was set; trace: controller-runtime complained instead (and
	// then discards every log).
	lateLog, trace := make(chan string, 1), make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		for lines.Scan() {
			line := lines.Text()
			switch {
			case strings.Contains(line, neverSet):
				trace <- line
				return
			case strings.Contains(line, "workqueue_items") && time.Since(started) > 31*time.Second:
				select {
				case lateLog <- line:
				default:
				}
			}
		}
	}()
	select {
	case line := <-lateLog:
		t.Logf("a controller logged %s after start: %.120s", time.Since(started).Round(time.Second), line)
	case line := <-trace:
		t.Fatalf("the program set no logger: %s", line)
	case <-time.After(3 * time.Minute):
		t.Fatal("no controller logged past the 30 s mark within 3 minutes")
	}
	assert.Nil(t, cmd.ProcessState, "the program is still running")
}
