package testing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ControllerManagerBinary is the file name of kube-controller-manager in
// AssetsDir.
const ControllerManagerBinary = "kube-controller-manager"

// ErrControllerManagerMissing is returned when ClusterOptions asks for a
// controller manager and AssetsDir holds no kube-controller-manager. Its
// message says how to build it.
var ErrControllerManagerMissing = errors.New("kube-controller-manager not found")

// controllerManager is a running kube-controller-manager process.
type controllerManager struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	err  error         // its exit error, set before done is closed
}

// controllerManagerArgs are the flags for a kube-controller-manager that
// reaches the cluster with the admin kubeconfig at kubeconfig: every
// default controller, no leader election (one per cluster), no listening
// port, and the API server's service-account key so that the token
// controller runs too.
func controllerManagerArgs(kubeconfig, certDir string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--service-account-private-key-file=" + filepath.Join(certDir, "sa-signer.key"),
	}
}

// startControllerManager starts kube-controller-manager for c, its output
// in a log file beside the API server's certificates, and waits until its
// controllers run: the root-CA publisher has written kube-root-ca.crt to
// the default namespace.
func startControllerManager(c *Cluster, assets string, timeout time.Duration) (*controllerManager, error) {
	bin := filepath.Join(assets, ControllerManagerBinary) // StartCluster checked it is there
	kubeconfig := filepath.Join(c.certDir, "controller-manager.kubeconfig")
	if err := os.WriteFile(kubeconfig, c.Kubeconfig, 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(c.certDir, "controller-manager.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, controllerManagerArgs(kubeconfig, c.certDir)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting kube-controller-manager for cluster %q: %w", c.Name, err)
	}
	cm := &controllerManager{cmd: cmd, done: make(chan struct{})}
	go func() {
		cm.err = cmd.Wait()
		_ = logFile.Close()
		close(cm.done)
	}()
	if err := cm.waitRunning(c, timeout); err != nil {
		_ = cm.stop()
		return nil, fmt.Errorf("kube-controller-manager for cluster %q (log: %s): %w", c.Name, logFile.Name(), err)
	}
	return cm, nil
}

// waitRunning waits until the controllers have published the root CA in
// the default namespace, or the process exits, or timeout passes.
func (cm *controllerManager) waitRunning(c *Cluster, timeout time.Duration) error {
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-cm.done:
			return false, fmt.Errorf("exited before its controllers ran: %v", cm.err)
		default:
		}
		err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kube-root-ca.crt"}, &corev1.ConfigMap{})
		return err == nil, client.IgnoreNotFound(err)
	})
}

// stop asks the process to exit (SIGTERM), kills it after serverKillAfter,
// and waits for it.
func (cm *controllerManager) stop() error {
	_ = cm.cmd.Process.Signal(os.Interrupt)
	select {
	case <-cm.done:
	case <-time.After(serverKillAfter):
		_ = cm.cmd.Process.Kill()
		<-cm.done
	}
	return nil
}
