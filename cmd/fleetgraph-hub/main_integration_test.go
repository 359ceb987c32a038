//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The binary, built and run as a user runs it, serves an RGD applied to the
// hub on a spoke registered as a kubeconfig Secret, answers its probes and
// exits cleanly on SIGTERM.
func TestBinaryServesAnRGDOnASecretSpoke(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "hub.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, fleet.Hub.Kubeconfig, 0o600))
	probe := freeAddr(t)

	bin := buildBinary(t)
	p := startProcess(t, bin, "--kubeconfig", kubeconfig, "--allow-loopback-spokes", "--metrics-bind-address=0",
		"--health-probe-bind-address="+probe, "--leader-elect", "--leader-election-namespace=default")

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		res, err := probeClient.Get("http://" + probe + "/readyz")
		require.NoError(ct, err)
		defer res.Body.Close()
		assert.Equal(ct, http.StatusOK, res.StatusCode)
	}, time.Minute, 100*time.Millisecond, "readyz: %s", p.logs)

	admin, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	spoke := fleet.Spokes()[0]
	registerSpoke(t, admin, spoke.Name, spoke.Kubeconfig)
	applyWebAppRGD(t, admin, p)
	sc, err := client.New(spoke.Config, client.Options{})
	require.NoError(t, err)
	createActiveWebApp(t, sc, "from-binary", p)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		assert.NoError(t, p.err, "a SIGTERM ends the hub cleanly: %s", p.logs)
	case <-time.After(time.Minute):
		t.Fatalf("the hub did not stop within a minute of SIGTERM: %s", p.logs)
	}
}

// A flag mistake is reported before anything connects.
func TestBinaryRefusesAnUnknownProvider(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	out, err := exec.Command(bin, "--provider=nope").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), `unknown --provider "nope"`)
}

// registerSpoke makes a spoke known to the hub as a kubeconfig Secret.
func registerSpoke(t *testing.T, hub client.Client, name string, kubeconfig []byte) {
	t.Helper()
	ctx := context.Background()
	err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}})
	require.NoError(t, client.IgnoreAlreadyExists(err))
	require.NoError(t, hub.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: secret.DefaultNamespace, Name: name,
			Labels: map[string]string{secret.DefaultSecretLabel: "true"}},
		Data: map[string][]byte{secret.DefaultDataKey: kubeconfig},
	}))
}

// applyWebAppRGD creates the quickstart's RGD on the hub, once the hub
// process has installed the RGD CRD.
func applyWebAppRGD(t *testing.T, hub client.Client, p *process) {
	t.Helper()
	rgds, err := v1alpha1.LoadFile("../../examples/quickstart/webapp.yaml")
	require.NoError(t, err)
	rgd := rgds[0]
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(hub.Create(context.Background(), rgd.DeepCopy())))
	}, time.Minute, 100*time.Millisecond, "the binary installs the RGD CRD: %s", p.logs)
}

// createActiveWebApp creates a WebApp on a spoke as soon as the spoke serves
// the kind, and waits until it is ACTIVE.
func createActiveWebApp(t *testing.T, spoke client.Client, name string, p *process) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	app := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": name}}}
	app.SetAPIVersion("kro.run/v1alpha1")
	app.SetKind("WebApp")
	app.SetNamespace("default")
	app.SetName(name)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(spoke.Create(ctx, app.DeepCopy())))
	}, time.Minute, 100*time.Millisecond, "the spoke serves WebApp: %s", p.logs)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := app.DeepCopy()
		require.NoError(ct, spoke.Get(ctx, client.ObjectKeyFromObject(app), got))
		state, _, _ := unstructured.NestedString(got.Object, "status", "state")
		assert.Equal(ct, "ACTIVE", state)
	}, time.Minute, 100*time.Millisecond, "instance ACTIVE: %s", p.logs)
	return app
}

var probeClient = &http.Client{Timeout: 5 * time.Second}

// built is the binary the package's tests run: linking it takes seconds,
// so it is built once, into a directory TestMain removes.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// buildBinary returns the path of the binary, building it on first use.
// Tests only run it, so they may share it.
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "fleetgraph-hub-test-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "fleetgraph-hub")
		if out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w: %s", err, out)
		}
	})
	require.NoError(t, built.err)
	return built.bin
}

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// process is the binary running, with its output collected.
type process struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{} // closed when the process has exited
	err  error         // its exit, once done is closed
}

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), logs: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("\n--- hub logs ---\n%s", b.buf.String())
}
