package fair

import (
	"errors"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

// Retries of failed reconciles are limited as controller-runtime limits
// them, with one difference: the bucket that caps their rate is per flow
// (one namespace of one cluster), not one for the whole queue. With a
// single bucket, a tenant whose instances keep failing spends every token,
// and another tenant's one retry waits behind a hundred of them (at 10 a
// second, ten seconds); with a bucket per flow each tenant spends its own.

const (
	// retryBase and retryMax bound each request's exponential backoff.
	retryBase = 5 * time.Millisecond
	retryMax  = 1000 * time.Second
	// retryQPS and retryBurst shape each flow's bucket of retries.
	retryQPS   = 10
	retryBurst = 100
	// retryRefill is how long an unused bucket takes to fill again: a
	// full bucket is the same as none, so it is then dropped.
	retryRefill = retryBurst / retryQPS * time.Second
	// limitRetryFactor is how many times what a reconcile stopped by a
	// limit took its retry waits at least after its flow's previous one
	// (After).
	limitRetryFactor = 10
)

// ErrStoppedByLimit marks the error of a reconcile whose evaluation was
// stopped by one of the graph's limits (reason LimitExceeded): Retries.After
// makes its retry wait longer.
var ErrStoppedByLimit = errors.New("stopped by a limit")

var _ workqueue.TypedRateLimiter[mcreconcile.Request] = &Retries{}

// Retries delays a failed request by the longer of its own
// exponential backoff and what its flow's bucket allows.
type Retries struct {
	items workqueue.TypedRateLimiter[mcreconcile.Request]
	now   func() time.Time

	mu    sync.Mutex
	flows map[flow]*rate.Limiter
	// paced holds, per flow, when the last retry of a reconcile stopped
	// by a limit was scheduled to have paid for its time (After).
	paced map[flow]time.Time
	swept time.Time
}

func newRetries() *Retries {
	return &Retries{
		items: workqueue.NewTypedItemExponentialFailureRateLimiter[mcreconcile.Request](retryBase, retryMax),
		now:   time.Now,
		flows: map[flow]*rate.Limiter{},
		paced: map[flow]time.Time{},
	}
}

// When returns how long req waits before it is retried.
func (l *Retries) When(req mcreconcile.Request) time.Duration {
	backoff := l.items.When(req)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked(now)
	f := flowOf(req)
	b := l.flows[f]
	if b == nil {
		b = rate.NewLimiter(retryQPS, retryBurst)
		l.flows[f] = b
	}
	return max(backoff, b.ReserveN(now, 1).DelayFrom(now))
}

// After is how long req waits before it is retried after a reconcile that
// took took and failed with err: When's backoff, and for a reconcile
// stopped by one of the graph's limits (ErrStoppedByLimit) the flow's pace.
// Such a failure comes back the same until the instance changes, and it
// may have spent its whole budget (Limits.InstanceTimeout): retried at the
// backoff's first steps (5 ms, 10 ms, ...) an instance that spends 2 s each
// time would hold a worker for half a minute, and a tenant with a few of
// them every worker of the graph and the hub's CPU.
//
// The pace is per flow, not per instance: each such retry is scheduled
// limitRetryFactor times what its reconcile took after the flow's previous
// one, so that a namespace's reconciles stopped by limits together hold at
// most 1/(1+limitRetryFactor) of a worker's time, however many instances
// it has (sixteen instances spending 2 s each held 1.5 of the machine's
// two cores when each instance had that floor of its own).
func (l *Retries) After(req mcreconcile.Request, err error, took time.Duration) time.Duration {
	delay := l.When(req)
	if errors.Is(err, ErrStoppedByLimit) {
		delay = max(delay, l.pace(req, took))
	}
	return delay
}

// pace schedules a retry of req's flow limitRetryFactor times took after
// the flow's previous one, or after now, and returns how long it waits.
func (l *Retries) pace(req mcreconcile.Request, took time.Duration) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	f := flowOf(req)
	at := l.paced[f]
	if at.Before(now) {
		at = now
	}
	at = at.Add(limitRetryFactor * took)
	l.paced[f] = at
	return at.Sub(now)
}

// sweepLocked drops, at most once per retryRefill, the buckets that are
// full again and the paces that have passed, so that the maps hold only
// flows that failed lately.
func (l *Retries) sweepLocked(now time.Time) {
	if now.Sub(l.swept) < retryRefill {
		return
	}
	l.swept = now
	for f, b := range l.flows {
		if b.TokensAt(now) >= retryBurst {
			delete(l.flows, f)
		}
	}
	for f, at := range l.paced {
		if at.Before(now) {
			delete(l.paced, f)
		}
	}
}

// NumRequeues is how many times req was retried since it last succeeded.
func (l *Retries) NumRequeues(req mcreconcile.Request) int { return l.items.NumRequeues(req) }

// Forget resets req's backoff.
func (l *Retries) Forget(req mcreconcile.Request) { l.items.Forget(req) }

// flowCount is the number of buckets held, for tests.
func (l *Retries) flowCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.flows)
}
