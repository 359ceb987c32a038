package testing

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Pause freezes the cluster's API server process (SIGSTOP): it keeps its
// port, accepts connections and answers nothing, as a hung or partitioned
// server would. Resume lets it go on where it stopped. Tests that pause a
// cluster should Resume it in their cleanup, before the cluster is stopped.
func (c *Cluster) Pause() error { return c.signalAPIServer(syscall.SIGSTOP) }

// Resume undoes Pause (SIGCONT).
func (c *Cluster) Resume() error { return c.signalAPIServer(syscall.SIGCONT) }

func (c *Cluster) signalAPIServer(sig syscall.Signal) error {
	pid, err := c.apiServerPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signalling the API server of cluster %q: %w", c.Name, err)
	}
	return nil
}

// apiServerPID finds the kube-apiserver process serving this cluster by its
// --secure-port flag: envtest does not expose the process.
func (c *Cluster) apiServerPID() (int, error) {
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return 0, fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	flag := []byte("--secure-port=" + u.Port())
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the process is gone
		}
		args := bytes.Split(b, []byte{0})
		if len(args) == 0 || filepath.Base(string(args[0])) != "kube-apiserver" {
			continue
		}
		for _, a := range args {
			if bytes.Equal(a, flag) {
				return strconv.Atoi(filepath.Base(filepath.Dir(f)))
			}
		}
	}
	return 0, fmt.Errorf("cluster %q: no kube-apiserver process with %s", c.Name, flag)
}
