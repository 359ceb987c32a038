package spoke

import (
	"math/rand/v2"
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

// resyncDue reports whether the instance's full resync is due.
func (m *member) resyncDue(key types.NamespacedName) bool {
	if m.c.opts.Resync < 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.resyncAt[key]
	return ok && !time.Now().Before(at)
}

// scheduleResync sets the instance's next full resync after one (full) or
// the first reconcile, and returns how long until it is due; 0 when resync
// is off.
func (m *member) scheduleResync(key types.NamespacedName, full bool) time.Duration {
	period := m.c.opts.Resync
	if period < 0 {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.resyncAt[key]
	if full || !ok {
		at = time.Now().Add(period + time.Duration(rand.Float64()*resyncJitter*float64(period)))
		m.resyncAt[key] = at
	}
	return max(time.Until(at), time.Millisecond)
}
