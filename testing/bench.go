package testing

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// ErrNoProcess is returned when a cluster's kube-apiserver or etcd process
// cannot be found in /proc (on a system without it, or once stopped).
var ErrNoProcess = errors.New("process not found")

// NoRateLimit returns a copy of cfg whose clients have no client-side rate
// limit. StartCluster's configs allow 500 requests/s with bursts of 1,000
// per REST client, and controller-runtime makes one REST client, so one
// token bucket, per kind: a controller using four kinds may make four
// times as many requests as a direct client using one. A benchmark gives
// NoRateLimit to the system under test and to its floor alike, so that
// neither waits on a limit the other does not have.
func NoRateLimit(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	return cfg
}

// ProcessCPU is the CPU time (user and system) a cluster's processes have
// used since they started.
type ProcessCPU struct {
	APIServer, Etcd time.Duration
}

// Sub returns the CPU used between o and p.
func (p ProcessCPU) Sub(o ProcessCPU) ProcessCPU {
	return ProcessCPU{APIServer: p.APIServer - o.APIServer, Etcd: p.Etcd - o.Etcd}
}

// Add returns the sum of p and o (e.g. over the clusters of a fleet).
func (p ProcessCPU) Add(o ProcessCPU) ProcessCPU {
	return ProcessCPU{APIServer: p.APIServer + o.APIServer, Etcd: p.Etcd + o.Etcd}
}

func (p ProcessCPU) String() string {
	return fmt.Sprintf("kube-apiserver %.2fs, etcd %.2fs", p.APIServer.Seconds(), p.Etcd.Seconds())
}

// APIServerPID returns the process id of the cluster's kube-apiserver,
// found in /proc by the port it serves on (Linux only).
func (c *Cluster) APIServerPID() (int, error) {
	return findProcess("kube-apiserver", "--secure-port="+c.env.ControlPlane.APIServer.SecureServing.Port)
}

// EtcdPID returns the process id of the cluster's etcd, found in /proc by
// the URL it serves clients on (Linux only).
func (c *Cluster) EtcdPID() (int, error) {
	return findProcess("etcd", "--listen-client-urls="+c.env.ControlPlane.Etcd.URL.String())
}

// CPU returns the CPU time the cluster's kube-apiserver and etcd have used
// so far: a benchmark reads it before and after a phase to see what the
// phase cost the servers (Linux only).
func (c *Cluster) CPU() (ProcessCPU, error) {
	apiserver, err := c.APIServerPID()
	if err != nil {
		return ProcessCPU{}, err
	}
	etcd, err := c.EtcdPID()
	if err != nil {
		return ProcessCPU{}, err
	}
	a, err := processCPU(apiserver)
	if err != nil {
		return ProcessCPU{}, err
	}
	e, err := processCPU(etcd)
	if err != nil {
		return ProcessCPU{}, err
	}
	return ProcessCPU{APIServer: a, Etcd: e}, nil
}

// findProcess returns the pid of the process whose executable is named
// name and whose command line has the argument arg.
func findProcess(name, arg string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("%s with %s: %w: %w", name, arg, ErrNoProcess, err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(raw), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != name {
			continue
		}
		for _, a := range args[1:] {
			if a == arg {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("%s with %s: %w", name, arg, ErrNoProcess)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// processCPU reads the user and system time of pid from /proc.
func processCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("pid %d: %w: %w", pid, ErrNoProcess, err)
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis (state is field 3; utime 14, stime 15).
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("pid %d: short /proc stat %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("pid %d: %w", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}
