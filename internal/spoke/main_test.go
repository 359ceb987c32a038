package spoke_test

import (
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

// TestMain fails the package's tests if any goroutine outlives them (issue
// 13, Done-when 9): every Runtime, cluster and fleet a test started must be
// gone by the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, upstreamLeaks...)
}
