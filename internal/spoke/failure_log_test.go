package spoke

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/fair"
)

// levels records, per line, "error" or the V level of an info line.
type levels struct {
	mu    sync.Mutex
	lines []string
}

func (l *levels) Init(logr.RuntimeInfo)              {}
func (l *levels) Enabled(int) bool                   { return true }
func (l *levels) WithValues(...any) logr.LogSink     { return l }
func (l *levels) WithName(string) logr.LogSink       { return l }
func (l *levels) Info(level int, _ string, _ ...any) { l.add([]string{"V0", "V1"}[min(level, 1)]) }
func (l *levels) Error(error, string, ...any)        { l.add("error") }
func (l *levels) add(s string)                       { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *levels) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// A failing instance is logged at error level when it starts failing and
// when its error changes, not on every retry; after a success, the same
// error is news again. Another instance's failures are its own.
func TestReconcileFailuresAreLoggedAtErrorLevelOncePerChange(t *testing.T) {
	sink := &levels{}
	log := logr.New(sink)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request]())
	defer q.ShutDown()
	req := mcreconcile.Request{ClusterName: "a", Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "shop"}}}
	other := mcreconcile.Request{ClusterName: "b", Request: req.Request}
	fail := func(r mcreconcile.Request, msg string) {
		logFailure(log, q, "failure-log-test", r, errors.New(msg))
		q.AddRateLimited(r) // as process does after logging
	}

	fail(req, "child config: the server refused it")
	fail(req, "child config: the server refused it")
	fail(req, "child config: the server refused it")
	assert.Equal(t, []string{"error", "V1", "V1"}, sink.take(), "the retries of one error")

	fail(req, "child deployment: quota exceeded")
	fail(other, "child config: the server refused it")
	assert.Equal(t, []string{"error", "error"}, sink.take(), "a new error, and another instance's first")

	q.Forget(req) // a reconcile succeeded
	fail(req, "child deployment: quota exceeded")
	assert.Equal(t, []string{"error"}, sink.take(), "failing again after a success")
}

func TestAFailureOfALimitIsStoppedByLimitForTheRetries(t *testing.T) {
	stopped := &limitFailure{"template: ... (Limits.InstanceTimeout)"}
	assert.ErrorIs(t, fmt.Errorf("reconciling: %w", stopped), fair.ErrStoppedByLimit)
	assert.Equal(t, stopped.message, stopped.Error(), "the instance's message, untouched")
	assert.NotErrorIs(t, errors.New("the API server said no"), fair.ErrStoppedByLimit)
}
