package spoke_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

// upstreamLeaks are goroutines that libraries we do not own leave behind,
// each named with its reason; nothing of the Runtime's is ignored.
var upstreamLeaks = []goleak.Option{
	// Idle keep-alive connections of a stopped cluster's HTTP transport
	// belong to net/http's pool, not to the runtime; they end with their
	// idle timeout.
	goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	// apimachinery's watch.Filter, which controller-runtime's metadata
	// informers use, blocks forever on a send when its consumer stopped
	// mid-event: an upstream leak of the cluster's cache, not of the
	// runtime. ReportWatchErrors drains stopped watches, which ends most
	// of them (BenchmarkFleet: 3 left of 154 at 100 clusters), but not all.
	goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"),
}

// stopSharedFleet stops the fleet the integration tests share
// (env_integration_test.go), if one was started.
var stopSharedFleet func() error

// defaultParallel is how many of the package's parallel tests run at once
// unless -parallel says otherwise. They spend most of their time waiting
// on API servers (a manager starting, a CRD being established, discovery
// catching up), so more of them than the machine has cores fit; measured
// on 2 cores, 4 at once took the parallel part from 53 s to 35 s.
const defaultParallel = 4

// TestMain fails the package's tests if any goroutine outlives them (issue
// 13, Done-when 9): every Runtime, cluster and fleet a test started must be
// gone by the end, the shared fleet stopped first.
func TestMain(m *testing.M) {
	flag.Parse()
	parallelGiven := false
	flag.Visit(func(f *flag.Flag) { parallelGiven = parallelGiven || f.Name == "test.parallel" })
	if !parallelGiven {
		_ = flag.Set("test.parallel", strconv.Itoa(max(defaultParallel, runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	if stopSharedFleet != nil {
		if err := stopSharedFleet(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the shared fleet:", err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(upstreamLeaks...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak: goroutines outlived the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}
