package testing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KCPVersion is the kcp version hack/kcp/build.sh builds.
const KCPVersion = "v0.30.0"

// ErrKCPMissing is returned when the kcp binary cannot be found. Its
// message says how to build it.
var ErrKCPMissing = errors.New("kcp binary not found")

// WorkspacesGVR is kcp's tenancy.kcp.io/v1alpha1 Workspace resource.
var WorkspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}

var workspaceTypesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspacetypes"}

// KCPBinary returns the path of the kcp binary: the KCP_BINARY environment
// variable when set, else the cache path hack/kcp/build.sh builds into
// (CacheDir()/kcp/<KCPVersion>/kcp). It fails with ErrKCPMissing when the
// file is absent.
func KCPBinary() (string, error) {
	bin := os.Getenv("KCP_BINARY")
	if bin == "" {
		bin = filepath.Join(cacheRoot(), "kcp", KCPVersion, "kcp")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%w at %s; run `make kcp-assets` (or hack/kcp/build.sh) to build kcp %s "+
			"from the Go module proxy, or set KCP_BINARY", ErrKCPMissing, bin, KCPVersion)
	}
	return bin, nil
}

// KCPOptions configures a test kcp server. The zero value is usable.
type KCPOptions struct {
	// StartTimeout bounds the wait until kcp is ready and its root workspace
	// bootstrapped. Defaults to 3 minutes (about 30 s on an idle 2-core
	// machine).
	StartTimeout time.Duration
	// ExtraArgs are appended to `kcp start`. Defaults to none.
	ExtraArgs []string
}

// KCP is a kcp server on loopback with a temporary root directory.
type KCP struct {
	// Config reaches the server as the kcp admin, without a logical cluster
	// in its host: use ConfigFor for a workspace.
	Config *rest.Config
	// RootDir is kcp's root directory (admin.kubeconfig, embedded etcd data,
	// kcp.log); it is removed by Stop.
	RootDir string

	cmd      *exec.Cmd
	exited   chan struct{}
	stopOnce sync.Once
	stopErr  error
}

// StartKCP starts a kcp server and stops it on t.Cleanup. It fails the test,
// saying how to build kcp, when the binary is missing; it never skips.
// Starting kcp takes tens of seconds: share one per test package.
func StartKCP(t TestingT, opts ...KCPOptions) *KCP {
	t.Helper()
	o := KCPOptions{}
	if len(opts) > 0 {
		o = opts[0]
	}
	k, err := NewKCP(o)
	if err != nil {
		t.Fatalf("starting kcp: %v", err)
	}
	t.Cleanup(func() {
		if err := k.Stop(); err != nil {
			t.Logf("stopping kcp: %v", err)
		}
	})
	return k
}

// NewKCP starts a kcp server on free loopback ports and waits until it is
// ready and its root workspace is usable. Call Stop when done.
func NewKCP(opts KCPOptions) (*KCP, error) {
	bin, err := KCPBinary()
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	root, err := os.MkdirTemp("", "fleetgraph-kcp-")
	if err != nil {
		return nil, err
	}
	k := &KCP{RootDir: root, exited: make(chan struct{})}
	if err := k.start(bin, opts); err != nil {
		_ = k.Stop()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	if err := k.waitReady(ctx); err != nil {
		err = fmt.Errorf("kcp did not become ready: %w; last output:\n%s", err, k.logTail())
		_ = k.Stop()
		return nil, err
	}
	return k, nil
}

func (k *KCP) start(bin string, opts KCPOptions) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(k.RootDir, "kcp.log"))
	if err != nil {
		return err
	}
	args := append([]string{"start",
		"--root-directory=" + k.RootDir,
		"--bind-address=127.0.0.1",
		"--external-hostname=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--embedded-etcd-client-port=" + strconv.Itoa(ports[1]),
		"--embedded-etcd-peer-port=" + strconv.Itoa(ports[2]),
	}, opts.ExtraArgs...)
	k.cmd = exec.Command(bin, args...)
	k.cmd.Dir = k.RootDir
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Stop kills the whole group
	if err := k.cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("running %s: %w", bin, err)
	}
	go func() {
		_ = k.cmd.Wait()
		_ = logFile.Close()
		close(k.exited)
	}()
	return nil
}

// waitReady polls until the admin kubeconfig exists, /readyz answers ok,
// the root workspace serves workspaces and its universal workspace type
// exists.
func (k *KCP) waitReady(ctx context.Context) error {
	return poll(ctx, 250*time.Millisecond, func() error {
		select {
		case <-k.exited:
			return errStop{errors.New("kcp exited")}
		default:
		}
		if k.Config == nil {
			cfg, err := loadAdminConfig(filepath.Join(k.RootDir, "admin.kubeconfig"))
			if err != nil {
				return err
			}
			k.Config = cfg
		}
		if err := k.readyz(ctx); err != nil {
			return err
		}
		root := k.dynamic(logicalcluster.NewPath("root"))
		if _, err := root.Resource(WorkspacesGVR).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return err
		}
		// CreateWorkspace uses root:universal, which kcp bootstraps after
		// it reports ready.
		_, err := root.Resource(workspaceTypesGVR).Get(ctx, "universal", metav1.GetOptions{})
		return err
	})
}

func (k *KCP) readyz(ctx context.Context) error {
	rc, err := rest.HTTPClientFor(k.Config)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.Config.Host+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := rc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", resp.Status)
	}
	return nil
}

func loadAdminConfig(path string) (*rest.Config, error) {
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, err
	}
	// The "base" context reaches the server without a logical cluster.
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, "base", &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg, nil
}

// ConfigFor returns a copy of Config whose requests go to the logical
// cluster (a path such as root:org, or a logical cluster name).
func (k *KCP) ConfigFor(cluster logicalcluster.Path) *rest.Config {
	cfg := rest.CopyConfig(k.Config)
	cfg.Host = k.Config.Host + cluster.RequestPath()
	return cfg
}

func (k *KCP) dynamic(cluster logicalcluster.Path) dynamic.Interface {
	return dynamic.NewForConfigOrDie(k.ConfigFor(cluster))
}

// CreateWorkspace creates a workspace of type root:universal called name in
// parent and waits until it is Ready. It returns its logical cluster name;
// its path is parent.Join(name).
func (k *KCP) CreateWorkspace(ctx context.Context, parent logicalcluster.Path, name string) (logicalcluster.Name, error) {
	ws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.kcp.io/v1alpha1",
		"kind":       "Workspace",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"type": map[string]any{"name": "universal", "path": "root"}},
	}}
	workspaces := k.dynamic(parent).Resource(WorkspacesGVR)
	if err := k.createWorkspace(ctx, workspaces, ws); err != nil {
		return "", fmt.Errorf("creating workspace %s in %s: %w", name, parent, err)
	}
	var cluster logicalcluster.Name
	err := poll(ctx, 100*time.Millisecond, func() error {
		got, err := workspaces.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		spec, _, _ := unstructured.NestedString(got.Object, "spec", "cluster")
		if phase != "Ready" || spec == "" {
			return fmt.Errorf("workspace %s in %s is %q", name, parent, phase)
		}
		cluster = logicalcluster.Name(spec)
		return nil
	})
	return cluster, err
}

// workspaceTypeSettle bounds how long a new workspace may be refused
// because kcp's admission has not seen its workspace type yet.
const workspaceTypeSettle = 30 * time.Second

// createWorkspace creates ws, retrying while kcp's admission refuses it
// for a workspace type it does not know yet: kcp bootstraps
// root:universal after /readyz, and its admission reads the type from an
// informer that may lag the object waitReady saw.
func (k *KCP) createWorkspace(ctx context.Context, workspaces dynamic.ResourceInterface, ws *unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, workspaceTypeSettle)
	defer cancel()
	return poll(ctx, 200*time.Millisecond, func() error {
		_, err := workspaces.Create(ctx, ws, metav1.CreateOptions{})
		if err != nil && !(apierrors.IsForbidden(err) && strings.Contains(err.Error(), "workspacetypes")) {
			return errStop{err}
		}
		return err
	})
}

// DeleteWorkspace deletes the workspace called name in parent and waits
// until it is gone.
func (k *KCP) DeleteWorkspace(ctx context.Context, parent logicalcluster.Path, name string) error {
	workspaces := k.dynamic(parent).Resource(WorkspacesGVR)
	if err := workspaces.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting workspace %s in %s: %w", name, parent, err)
	}
	return poll(ctx, 100*time.Millisecond, func() error {
		_, err := workspaces.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("workspace %s in %s still exists", name, parent)
	})
}

// Stop kills kcp's process group, waits for it to exit and removes its root
// directory. It is safe to call more than once.
func (k *KCP) Stop() error {
	k.stopOnce.Do(func() {
		if k.cmd != nil && k.cmd.Process != nil {
			k.stopErr = k.kill()
		}
		if err := os.RemoveAll(k.RootDir); err != nil && k.stopErr == nil {
			k.stopErr = err
		}
	})
	return k.stopErr
}

func (k *KCP) kill() error {
	pgid := k.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-k.exited:
		return nil
	case <-time.After(20 * time.Second):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-k.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kcp (pid %d) did not exit", pgid)
	}
}

// logTail returns the end of kcp's output, for error messages.
func (k *KCP) logTail() string {
	data, err := os.ReadFile(filepath.Join(k.RootDir, "kcp.log"))
	if err != nil {
		return err.Error()
	}
	const max = 4000
	if len(data) > max {
		data = data[len(data)-max:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}

// errStop ends a poll early.
type errStop struct{ error }

// poll calls f every interval until it returns nil, returns an errStop, or
// ctx is done; then it returns f's last error.
func poll(ctx context.Context, interval time.Duration, f func() error) error {
	for {
		err := f()
		var stop errStop
		switch {
		case err == nil:
			return nil
		case errors.As(err, &stop):
			return stop.error
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
