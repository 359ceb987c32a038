package spoke

import (
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// Instance counts (Runtime.Counts, and through it the hub's FleetStatus)
// are what the cluster's instance cache holds, not what this process has
// reconciled: a hub that restarts next to 200 instances shows 200 as soon
// as the instance watch has its initial list, however long the reconciles
// take. "Ready" keeps its meaning: the instance's status.state is ACTIVE,
// as the instance shows it (written by us, before or after a restart).
//
// The counts are kept from the events of the member's instance handler,
// each of which carries the object's state before and after, so reading
// them costs two atomic loads and keeping them costs no copy of the cache.
// A tally belongs to one handler registration: when the instance informer
// is replaced (crd.go), the new registration starts a new tally from its
// own initial list, and late events of the old one count nowhere.

// instanceTally counts the instances one registration of the instance
// handler has been told about, and how many of them are ACTIVE.
type instanceTally struct {
	total, ready atomic.Int64
}

// newInstanceHandler returns the handler for a new registration on the
// instance informer, with a tally of its own that becomes the member's.
func (m *member) newInstanceHandler() instanceHandler {
	t := &instanceTally{}
	m.tally.Store(t)
	return instanceHandler{m: m, tally: t}
}

func (t *instanceTally) added(u *unstructured.Unstructured) {
	t.total.Add(1)
	if isActive(u) {
		t.ready.Add(1)
	}
}

func (t *instanceTally) updated(o, n *unstructured.Unstructured) {
	switch was, is := isActive(o), isActive(n); {
	case is && !was:
		t.ready.Add(1)
	case was && !is:
		t.ready.Add(-1)
	}
}

func (t *instanceTally) deleted(u *unstructured.Unstructured) {
	t.total.Add(-1)
	if isActive(u) {
		t.ready.Add(-1)
	}
}

func (t *instanceTally) count() Count {
	if t == nil {
		return Count{}
	}
	return Count{Total: int(t.total.Load()), Ready: int(t.ready.Load())}
}

// isActive reports whether the instance shows status.state ACTIVE.
func isActive(u *unstructured.Unstructured) bool {
	status, _ := u.Object["status"].(map[string]any)
	state, _ := status["state"].(string)
	return state == contract.StateActive
}

// count is the member's instance count, from its current tally; zero
// until the instance watch has started.
func (m *member) count() Count {
	c := m.tally.Load().count()
	c.Confirmed, c.Errors = m.states.active(), m.states.errored()
	return c
}
