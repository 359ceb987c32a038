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

//
// Every change of a tally is told to Options.CountsChanged (with the
// graph's name), so that what shows the counts follows them at once.

// instanceTally counts the instances one registration of the instance
// handler has been told about, how many of them are ACTIVE and how many
// are in ERROR.
type instanceTally struct {
	total, ready, errored atomic.Int64
	// changed, if set, is told of every change.
	changed func()
}

// newInstanceHandler returns the handler for a new registration on the
// instance informer, with a tally of its own that becomes the member's.
func (m *member) newInstanceHandler() instanceHandler {
	t := &instanceTally{}
	if tell := m.c.opts.CountsChanged; tell != nil {
		name := m.g.Name
		t.changed = func() { tell(name) }
	}
	m.tally.Store(t)
	return instanceHandler{m: m, tally: t}
}

func (t *instanceTally) added(u *unstructured.Unstructured) {
	t.total.Add(1)
	t.move(stateOf(u), 1)
	t.tell()
}

func (t *instanceTally) updated(o, n *unstructured.Unstructured) {
	if was, is := stateOf(o), stateOf(n); was != is {
		t.move(was, -1)
		t.move(is, 1)
		t.tell()
	}
}

func (t *instanceTally) deleted(u *unstructured.Unstructured) {
	t.total.Add(-1)
	t.move(stateOf(u), -1)
	t.tell()
}

// move counts one instance in or out (by) of the state's tally.
func (t *instanceTally) move(state string, by int64) {
	switch state {
	case contract.StateActive:
		t.ready.Add(by)
	case contract.StateError:
		t.errored.Add(by)
	}
}

func (t *instanceTally) tell() {
	if t.changed != nil {
		t.changed()
	}
}

func (t *instanceTally) count() Count {
	if t == nil {
		return Count{}
	}
	return Count{Total: int(t.total.Load()), Ready: int(t.ready.Load()), InError: int(t.errored.Load())}
}

// stateOf is the instance's status.state.
func stateOf(u *unstructured.Unstructured) string {
	status, _ := u.Object["status"].(map[string]any)
	state, _ := status["state"].(string)
	return state
}

// isActive reports whether the instance shows status.state ACTIVE.
func isActive(u *unstructured.Unstructured) bool { return stateOf(u) == contract.StateActive }

// count is the member's instance count, from its current tally; zero,
// and not Counted, until the instance watch has listed the instances, and
// while it waits to be replaced after the graph's CRD went away (crd.go):
// the old tally then counts instances the cluster may no longer hold.
func (m *member) count() Count {
	if m.crd.busy() {
		return Count{}
	}
	c := m.tally.Load().count()
	c.Confirmed, c.Errors, c.Reconciled = m.states.active(), m.states.errored(), m.states.reconciled()
	select {
	case <-m.ready:
		c.Counted = true
	default:
	}
	return c
}
