package spoke_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// Runtime, its manager and the API server a test started must be gone by
// the end. The ignored goroutines are other libraries', each with its
// reason.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of a stopped client belong to
		// net/http's pool; they end with their idle timeout.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		// apimachinery's watch.Filter (controller-runtime's metadata
		// informers) blocks on a send when its consumer stopped mid-event.
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"),
	)
}
