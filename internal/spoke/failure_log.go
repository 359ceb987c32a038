package spoke

import (
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

// An instance that cannot be reconciled is retried with backoff, for as long
// as it fails: logging each retry at error level buries every other line
// (and, with zap's production config, each comes with a stack trace). So a
// failure is logged at error level when it starts (the request had no
// failed retry pending: its last reconcile succeeded or it is new) and when
// its message changes; the same failure again is logged at V(1).

// maxLoggedFailures bounds the memory of last failures: past it, everything
// is forgotten and the next failure of each instance is logged again.
const maxLoggedFailures = 10000

// failureKey is one instance of one graph.
type failureKey struct {
	graph string
	req   mcreconcile.Request
}

// failureLog remembers the last failure logged per instance.
type failureLog struct {
	mu   sync.Mutex
	last map[failureKey]string
}

// failures is process-wide: a graph's controller is replaced on update, and
// the same failure under the new version is no news.
var failures = &failureLog{last: map[failureKey]string{}}

// logFailure logs a failed reconcile of req by graph's controller, before
// req is requeued with backoff on q.
func logFailure(log logr.Logger, q workqueue.TypedRateLimitingInterface[mcreconcile.Request], graph string,
	req mcreconcile.Request, err error) {
	kv := []any{"cluster", req.ClusterName.String(), "instance", req.NamespacedName, "retries", q.NumRequeues(req)}
	if failures.changed(failureKey{graph: graph, req: req}, err.Error(), q.NumRequeues(req) == 0) {
		log.Error(err, "reconcile failed; retrying with backoff (repeats of this error are logged at V(1))", kv...)
		return
	}
	log.V(1).Info("reconcile failed again", append(kv, "error", err.Error())...)
}

// changed records msg as key's last failure and reports whether it is news:
// a first failure, or a message other than the last one.
func (f *failureLog) changed(key failureKey, msg string, first bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	last, seen := f.last[key]
	if len(f.last) >= maxLoggedFailures && !seen {
		clear(f.last)
	}
	f.last[key] = msg
	return first || !seen || last != msg
}
