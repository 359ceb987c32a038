//go:build integration

package agent_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// requestCounter counts the requests made through the transports it
// wraps, by method and resource.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		c.mu.Lock()
		if c.counts == nil {
			c.counts = map[string]int{}
		}
		c.counts[req.Method+" "+resourceOf(req.URL)]++
		c.mu.Unlock()
		return next.RoundTrip(req)
	})
}

// resourceOf is the resource a request is about ("leases",
// "serviceaccounts/token"), watches marked "?watch"; the path for other
// requests (discovery).
func resourceOf(u *url.URL) string {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return u.Path
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	if len(rest) == 0 {
		return u.Path
	}
	s := rest[0]
	if len(rest) >= 3 {
		s += "/" + rest[2] // a subresource
	}
	if u.Query().Get("watch") == "true" {
		s += "?watch"
	}
	return s
}

// take returns the counts since the last take, and their total.
func (c *requestCounter) take() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, total := c.counts, 0
	for _, n := range out {
		total += n
	}
	c.counts = map[string]int{}
	return out, total
}

func describeCounts(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, counts[k])
	}
	return b.String()
}

// procUsage is a process's CPU time and memory, from /proc.
type procUsage struct {
	cpu      time.Duration
	rss, hwm uint64 // bytes
}

func usageOf(pid int) (procUsage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procUsage{}, err
	}
	// Fields after the command's closing parenthesis: utime and stime are
	// the 12th and 13th of them, in clock ticks (100 per second on Linux).
	rest := stat[bytes.LastIndexByte(stat, ')')+2:]
	fields := strings.Fields(string(rest))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	u := procUsage{cpu: time.Duration(utime+stime) * 10 * time.Millisecond}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			u.rss = kb << 10
		case "VmHWM:":
			u.hwm = kb << 10
		}
	}
	return u, nil
}

// apiServerPID finds the kube-apiserver of a test cluster by its port.
func apiServerPID(c *fgtesting.Cluster) (int, error) {
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return 0, err
	}
	flag := []byte("--secure-port=" + u.Port())
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
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
	return 0, fmt.Errorf("no kube-apiserver with %s", flag)
}

// cpuShare is CPU time over wall time, in cores.
func cpuShare(before, after procUsage, wall time.Duration) float64 {
	return (after.cpu - before.cpu).Seconds() / wall.Seconds()
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
