package spoke

import (
	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/retrylog"
)

// A reconcile failure is logged at error level when it starts (the request
// had no failed retry pending: its last reconcile succeeded or it is new)
// and when its message changes; the same failure again is logged at V(1).
// See internal/retrylog.

// failureKey is one instance of one graph.
type failureKey struct {
	graph string
	req   mcreconcile.Request
}

// failures is process-wide: a graph's controller is replaced on update, and
// the same failure under the new version is no news.
var failures retrylog.Memory[failureKey]

// logFailure logs a failed reconcile of req by graph's controller, before
// req is requeued with backoff on q.
func logFailure(log logr.Logger, q workqueue.TypedRateLimitingInterface[mcreconcile.Request], graph string,
	req mcreconcile.Request, err error) {
	kv := []any{"cluster", req.ClusterName.String(), "instance", req.NamespacedName, "retries", q.NumRequeues(req)}
	if failures.Failed(failureKey{graph: graph, req: req}, err.Error(), q.NumRequeues(req) == 0) {
		log.Error(err, "reconcile failed; retrying with backoff (repeats of this error are logged at V(1))", kv...)
		return
	}
	log.V(1).Info("reconcile failed again", append(kv, "error", err.Error())...)
}
