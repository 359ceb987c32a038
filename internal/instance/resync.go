package instance

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// This file schedules the periodic full resync of each instance: every
// Options.Resync (plus up to a fifth more, so that instances created
// together do not resync together) a reconcile applies every child even if
// the memory says nothing changed. Events drive everything else; the
// resync puts back drift that no event reported (a lost event, a watch that
// failed in the background, a change made while the process was blind).

// resyncJitter is the largest fraction of Options.Resync added to one
// instance's period.
const resyncJitter = 0.2

// ResyncDue reports whether the instance's full resync is due: its next
// Evaluate should apply every child (full).
func (e *Engine) ResyncDue(key types.NamespacedName) bool { return e.resync.due(key) }

// ScheduleResync sets the instance's next full resync after a reconcile
// that succeeded (full: one that was the resync, or the first) and returns
// how long until it is due, for the driver to reconcile it again then; 0
// when resync is off.
func (e *Engine) ScheduleResync(key types.NamespacedName, full bool) time.Duration {
	return e.resync.schedule(key, full)
}

// resyncSchedule is when each instance of an engine is next fully
// resynced.
type resyncSchedule struct {
	period time.Duration // Options.Resync; negative: off

	mu sync.Mutex
	at map[types.NamespacedName]time.Time
}

func newResyncSchedule(period time.Duration) *resyncSchedule {
	return &resyncSchedule{period: period, at: map[types.NamespacedName]time.Time{}}
}

// due reports whether the instance's full resync is due.
func (r *resyncSchedule) due(key types.NamespacedName) bool {
	if r.period < 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.at[key]
	return ok && !time.Now().Before(at)
}

// schedule sets the instance's next full resync after one (full) or the
// first reconcile, and returns how long until it is due; 0 when resync is
// off.
func (r *resyncSchedule) schedule(key types.NamespacedName, full bool) time.Duration {
	period := r.period
	if period < 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.at[key]
	if full || !ok {
		at = time.Now().Add(period + time.Duration(rand.Float64()*resyncJitter*float64(period)))
		r.at[key] = at
	}
	return max(time.Until(at), time.Millisecond)
}

// forget drops the schedule of an instance that is gone.
func (r *resyncSchedule) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.at, key)
}
