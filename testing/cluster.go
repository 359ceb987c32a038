package testing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ClusterOptions configures one real test cluster.
type ClusterOptions struct {
	// APIServerFlags are extra kube-apiserver flags, e.g.
	// {"service-cluster-ip-range": "10.96.0.0/16"} for benchmarks that create
	// many Services (envtest's default range holds 254). Defaults to none.
	APIServerFlags map[string]string
	// StartTimeout bounds how long kube-apiserver and etcd may take to start
	// each. Defaults to 90 seconds (a 2-core machine starting four at once
	// needs more than envtest's 20).
	StartTimeout time.Duration
	// ControllerManager starts a kube-controller-manager beside the API
	// server, with its default controllers, so that Deployments get
	// ReplicaSets and status, HorizontalPodAutoscalers scale, owner
	// references cascade and deleted namespaces go away. It needs the
	// kube-controller-manager binary in AssetsDir (build it with
	// `hack/envtest/build.sh kube-controller-manager`). The cluster is
	// returned once the controllers run (they have published the
	// kube-root-ca.crt ConfigMap). Defaults to false: no controllers run,
	// as in envtest.
	ControllerManager bool
}

// Cluster is one real kube-apiserver and etcd pair, listening on loopback.
type Cluster struct {
	// Name identifies the cluster in the fleet ("hub", "spoke-1", ...).
	Name string
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Kubeconfig holds the same credentials as a kubeconfig file with
	// embedded certificates, e.g. for a kubeconfig Secret or kubectl.
	Kubeconfig []byte

	env *envtest.Environment
	// certDir and dataDir are the API server's certificates and etcd's
	// data, ours so that envtest keeps them across StopServers and
	// StartServers; Stop removes them.
	certDir, dataDir string
	// snapshots are the copies of etcd's data SnapshotData made; Stop
	// removes them.
	snapshots []string
	// controllers is the kube-controller-manager process when
	// ClusterOptions.ControllerManager asked for one; Stop stops it first.
	controllers *controllerManager
}

// StartCluster starts a real API server named name. Stop it with Stop.
func StartCluster(name string, opts ClusterOptions) (*Cluster, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	if opts.ControllerManager {
		if _, err := os.Stat(filepath.Join(assets, ControllerManagerBinary)); err != nil {
			return nil, fmt.Errorf("%w in %s: run `hack/envtest/build.sh kube-controller-manager` to build it from the Go module proxy",
				ErrControllerManagerMissing, assets)
		}
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	certDir, err := os.MkdirTemp("", "fleetgraph-apiserver-")
	if err != nil {
		return nil, err
	}
	dataDir, err := os.MkdirTemp("", "fleetgraph-etcd-")
	if err != nil {
		_ = os.RemoveAll(certDir)
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: opts.StartTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: dataDir}
	env.ControlPlane.GetAPIServer().CertDir = certDir
	args := env.ControlPlane.GetAPIServer().Configure()
	// Keep the test server on loopback: by default it advertises the
	// machine's address in the default/kubernetes Service.
	args.Set("advertise-address", "127.0.0.1")
	for k, v := range opts.APIServerFlags {
		args.Set(k, v)
	}
	cfg, err := env.Start()
	if err != nil && env.Config != nil && strings.Contains(err.Error(), envtestNamespaceWait) {
		// envtest gives the default namespace a fixed 5 s after the API
		// server answers, which a loaded machine can exceed: the servers
		// run, so wait as long as the start may take.
		cfg, err = env.Config, waitForDefaultNamespace(env.Config, opts.StartTimeout)
	}
	if err != nil {
		_ = env.Stop() // what did start must not outlive the test
		_ = os.RemoveAll(certDir)
		_ = os.RemoveAll(dataDir)
		return nil, fmt.Errorf("starting API server for cluster %q: %w", name, err)
	}
	// Test servers are local and private: lift client-go's default 5 QPS
	// so that benchmarks measure the controllers, not the rate limiter.
	cfg.QPS, cfg.Burst = 500, 1000
	c := &Cluster{Name: name, Config: cfg, Kubeconfig: env.KubeConfig, env: env, certDir: certDir, dataDir: dataDir}
	if opts.ControllerManager {
		if c.controllers, err = startControllerManager(c, assets, opts.StartTimeout); err != nil {
			_ = c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// Stop stops the API server and etcd and removes their data.
func (c *Cluster) Stop() error {
	// A test's API server need not shut down gracefully: with clients
	// watching, a loaded machine took it past envtest's 30 s. It is
	// killed after serverKillAfter, as StopServers does (an error says it
	// was killed); env.Stop then stops etcd.
	var err error
	if c.controllers != nil {
		err = c.controllers.stop()
	}
	api := c.env.ControlPlane.GetAPIServer()
	api.StopTimeout = serverKillAfter
	_ = api.Stop()
	err = errors.Join(err, c.env.Stop())
	err = errors.Join(err, os.RemoveAll(c.certDir), os.RemoveAll(c.dataDir))
	for _, dir := range c.snapshots {
		err = errors.Join(err, os.RemoveAll(dir))
	}
	if err != nil {
		return fmt.Errorf("stopping cluster %q: %w", c.Name, err)
	}
	return nil
}

// serverKillAfter is how long StopServers lets the API server shut down
// before it kills it: with clients watching, a graceful shutdown takes
// longer than envtest waits, and a crash is what StopServers stands for.
const serverKillAfter = 2 * time.Second

// StopServers stops the cluster's kube-apiserver (killed if it has not
// stopped within 2 s, as in a crash) and etcd, keeping their addresses,
// certificates and data: clients get connection errors until
// StartServers. Not safe for concurrent use with StartServers or Stop.
func (c *Cluster) StopServers() error {
	cp := &c.env.ControlPlane
	api := cp.GetAPIServer()
	graceful := api.StopTimeout
	api.StopTimeout = serverKillAfter
	_ = api.Stop() // an error says it was killed
	api.StopTimeout = graceful
	if err := waitClosed(api.SecureServing.Address, api.SecureServing.Port, graceful); err != nil {
		return fmt.Errorf("stopping the API server of cluster %q: %w", c.Name, err)
	}
	if err := cp.Etcd.Stop(); err != nil {
		return fmt.Errorf("stopping etcd of cluster %q: %w", c.Name, err)
	}
	return nil
}

// waitClosed waits until nothing listens on host:port any more.
func waitClosed(host, port string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), time.Second)
		if err != nil {
			return nil
		}
		_ = conn.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("still listening on %s:%s after %s", host, port, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartServers starts the cluster's etcd and kube-apiserver again after
// StopServers, at the same addresses, with the same certificates (Config
// and Kubeconfig keep working). With emptyData, etcd's data directory is
// emptied first: the cluster comes back as a fresh one at the same
// endpoint, as a cluster rebuilt there would, or one whose etcd was lost.
func (c *Cluster) StartServers(emptyData bool) error {
	if emptyData {
		if err := emptyDir(c.dataDir); err != nil {
			return err
		}
	}
	return c.startServers()
}

// SnapshotData copies etcd's data as it is into a new directory and
// returns its path, for StartServersFrom: a cold backup, taken between
// StopServers and StartServers (etcd must not be running). Stop removes
// the snapshots.
func (c *Cluster) SnapshotData() (string, error) {
	dir, err := os.MkdirTemp("", "fleetgraph-etcd-snapshot-")
	if err != nil {
		return "", err
	}
	c.snapshots = append(c.snapshots, dir)
	if err := copyDir(c.dataDir, dir); err != nil {
		return "", fmt.Errorf("copying etcd's data of cluster %q: %w", c.Name, err)
	}
	return dir, nil
}

// StartServersFrom is StartServers with etcd's data replaced by a copy of
// snapshot (a path SnapshotData returned) first: the cluster comes back
// as it was when the snapshot was taken, as after an etcd restore from a
// backup, and its resourceVersions go back. The snapshot can be used
// again.
func (c *Cluster) StartServersFrom(snapshot string) error {
	if err := emptyDir(c.dataDir); err != nil {
		return err
	}
	if err := copyDir(snapshot, c.dataDir); err != nil {
		return fmt.Errorf("restoring etcd's data of cluster %q: %w", c.Name, err)
	}
	return c.startServers()
}

// startServers starts etcd and the API server on the data there is.
func (c *Cluster) startServers() error {
	cp := &c.env.ControlPlane
	if err := cp.Etcd.Start(); err != nil {
		return fmt.Errorf("starting etcd of cluster %q: %w", c.Name, err)
	}
	if err := cp.GetAPIServer().Start(); err != nil {
		return fmt.Errorf("starting the API server of cluster %q: %w", c.Name, err)
	}
	return nil
}

// emptyDir removes what dir holds, keeping dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyDir copies what src holds into dst, an existing directory, keeping
// each file's and directory's permissions (etcd wants its own private).
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.Mkdir(to, info.Mode().Perm())
		}
		return copyFile(path, to, info.Mode().Perm())
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// envtestNamespaceWait is how envtest's Start says its fixed wait for the
// default namespace ended (it has no sentinel error).
const envtestNamespaceWait = "default namespace didn't register within deadline"

// waitForDefaultNamespace polls until the default namespace exists, for up
// to timeout.
func waitForDefaultNamespace(cfg *rest.Config, timeout time.Duration) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("a client to wait for the default namespace: %w", err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Name: metav1.NamespaceDefault}, &corev1.Namespace{}) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the default namespace did not appear within %s: %w", timeout, err)
	}
	return nil
}
