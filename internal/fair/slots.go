package fair

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

// One tenant's heavy instances must delay only that tenant. A graph's
// workers are shared in two steps: among its clusters (a cluster has at
// most its share in flight, which the caller computes), and within a
// cluster among the namespaces that have work, in flight or waiting:
//
//   - a namespace has at most the cluster's share divided by those
//     namespaces (rounded up) in flight;
//   - once the cluster has instances in more than one namespace, a
//     namespace that already has a reconcile in flight may not take the
//     cluster's last free slot: it is kept for a namespace with nothing in
//     flight, which so starts at once however slow the others' reconciles
//     are, instead of waiting for one of them to end.
//
// A request that does not fit is parked without holding a worker, and put
// back in the queue when a reconcile of its cluster ends and it fits,
// namespaces with the fewest in flight first. With all instances in one
// namespace (the common case, and the benchmark's) none of this takes a
// slot away: that namespace may use the whole share.
//
// Cluster-scoped instances count as one namespace, the empty one.

// Slots is what one cluster has in flight and parked. It is not safe for
// concurrent use: its caller holds a lock.
type Slots struct {
	busy int
	ns   map[string]*nsLoad
	// waiting lists the namespaces with parked requests.
	waiting []string
	// starts counts the reconciles started, to date each namespace's last.
	starts uint64
}

// nsLoad is one namespace's part of the Slots. It is dropped once nothing is
// in flight or parked for it.
type nsLoad struct {
	busy int
	// lastStart is the number of the namespace's latest start (Slots.starts).
	lastStart uint64
	parked    fifo[types.NamespacedName]
	// isParked holds the parked names; a name admitted meanwhile (an event
	// queued it again) is taken out of it and skipped in parked.
	isParked map[types.NamespacedName]struct{}
}

// NewSlots returns Slots with nothing in flight.
func NewSlots() *Slots { return &Slots{ns: map[string]*nsLoad{}} }

func (l *Slots) namespace(ns string) *nsLoad {
	n := l.ns[ns]
	if n == nil {
		n = &nsLoad{isParked: map[types.NamespacedName]struct{}{}}
		l.ns[ns] = n
	}
	return n
}

// fits reports whether one more reconcile of namespace ns may start, with
// limit the cluster's share and spans whether the cluster has instances in
// more than one namespace. extra counts starts decided but not yet made.
func (l *Slots) fits(ns string, limit int, spans bool, extra map[string]int) bool {
	busy := l.busy
	for _, n := range extra {
		busy += n
	}
	if busy >= limit {
		return false
	}
	active := len(l.ns)
	nsBusy := extra[ns]
	if n := l.ns[ns]; n != nil {
		nsBusy += n.busy
	} else {
		active++
	}
	if nsBusy >= (limit+active-1)/active {
		return false
	}
	// The last free slot is kept for a namespace with nothing in flight.
	return !(spans && limit > 1 && nsBusy > 0 && busy+1 >= limit)
}

// Admit starts a reconcile of req if it fits in limit, the cluster's
// share, else parks it; spans says whether the cluster has instances in
// more than one namespace. It reports whether it started.
func (l *Slots) Admit(req mcreconcile.Request, limit int, spans bool) bool {
	ns := req.Namespace
	if !l.fits(ns, limit, spans, nil) {
		l.park(req)
		return false
	}
	n := l.namespace(ns)
	if _, ok := n.isParked[req.NamespacedName]; ok {
		delete(n.isParked, req.NamespacedName)
		if len(n.isParked) == 0 {
			l.stopWaiting(ns)
		}
	}
	n.busy++
	l.busy++
	l.starts++
	n.lastStart = l.starts
	return true
}

func (l *Slots) park(req mcreconcile.Request) {
	n := l.namespace(req.Namespace)
	if _, ok := n.isParked[req.NamespacedName]; ok {
		return
	}
	if len(n.isParked) == 0 {
		l.waiting = append(l.waiting, req.Namespace)
	}
	n.isParked[req.NamespacedName] = struct{}{}
	n.parked.push(req.NamespacedName)
}

// Done ends one reconcile of namespace ns.
func (l *Slots) Done(ns string) {
	l.busy--
	n := l.ns[ns]
	if n == nil {
		return
	}
	n.busy--
	l.dropIfIdle(ns, n)
}

func (l *Slots) dropIfIdle(ns string, n *nsLoad) {
	if n.busy <= 0 && len(n.isParked) == 0 {
		delete(l.ns, ns)
	}
}

// Idle reports whether nothing is in flight or parked.
func (l *Slots) Idle() bool { return l.busy <= 0 && len(l.ns) == 0 }

// Busy is the number of reconciles in flight.
func (l *Slots) Busy() int { return l.busy }

// Unpark takes out the parked requests that fit now, namespaces with the
// fewest in flight first (ties: the one that started a reconcile least
// lately), one request at a time; the caller puts them back in the queue.
func (l *Slots) Unpark(limit int, spans bool) []types.NamespacedName {
	var out []types.NamespacedName
	extra := map[string]int{}
	for len(l.waiting) > 0 {
		i := l.nextWaiting(extra)
		ns := l.waiting[i]
		if !l.fits(ns, limit, spans, extra) {
			break
		}
		n := l.ns[ns]
		name, ok := n.nextParked()
		if ok {
			out = append(out, name)
			extra[ns]++
		}
		if len(n.isParked) == 0 {
			l.stopWaiting(ns)
			l.dropIfIdle(ns, n)
		}
	}
	return out
}

func (l *Slots) stopWaiting(ns string) {
	l.waiting = slices.DeleteFunc(l.waiting, func(w string) bool { return w == ns })
}

// nextWaiting is the index in waiting of the namespace with the fewest in
// flight, counting extra, and of those the one whose latest start is
// oldest (a pick in extra counting as the latest).
func (l *Slots) nextWaiting(extra map[string]int) int {
	best, bestBusy, bestStart := -1, 0, uint64(0)
	for i, ns := range l.waiting {
		n := l.ns[ns]
		b, start := n.busy+extra[ns], n.lastStart
		if extra[ns] > 0 {
			start = l.starts + 1
		}
		if best < 0 || b < bestBusy || (b == bestBusy && start < bestStart) {
			best, bestBusy, bestStart = i, b, start
		}
	}
	return best
}

// nextParked takes the oldest name still parked.
func (n *nsLoad) nextParked() (types.NamespacedName, bool) {
	for n.parked.len() > 0 {
		name := n.parked.pop()
		if _, ok := n.isParked[name]; ok {
			delete(n.isParked, name)
			return name, true
		}
	}
	return types.NamespacedName{}, false
}
