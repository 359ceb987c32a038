package instance

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// This file collects orphans: children whose owning instance no longer
// exists. The finalizer deletes an instance's children, but an instance
// whose finalizer is removed by hand (the usual way to "unstick" one), a
// deletion interrupted that way half-done, or an apply that raced with
// the instance's deletion leave children that nothing would ever delete.
//
// It works for whichever driver, in every cluster the engine writes in:
// the children of a hub instance whose finalizer was removed by hand are
// collected on every cluster that holds them, as a spoke instance's are
// on its own.
//
// Finding them costs no request. The owned index (owned.go) of each
// cluster, kept from the child kinds' metadata watches, already groups
// children by the UID in their contract.LabelInstanceUID, and the driver's
// instance watch says which UIDs exist (ObserveInstance). An owner UID
// becomes a suspect when the instance watch reports its instance deleted
// (InstanceDeleted, or its name taken by a new UID), and when a child is
// recorded for a UID the instance watch does not hold (a child seen at
// start after the process restarted, or applied after its instance went).
// A suspect is looked at once Options.OrphanGrace has passed; nothing runs
// meanwhile (one timer per engine, and no goroutine until it fires), so an
// engine with nothing to collect costs nothing.
//
// Deleting is careful, because a wrong delete loses a tenant's data:
//
//   - The instance watch must have its initial list (Config.InstancesListed),
//     and a live read in the instances' cluster (GET of the instance by the
//     name in the child's labels, or a list of the namespace's instances
//     when that label was shortened) must show that no instance has the
//     UID: a cache that has not caught up never condemns a child. UIDs are
//     never reused, so once confirmed, gone is gone; a read that fails is
//     retried with backoff (an unreachable cluster keeps its children).
//   - Only a child that is ours is deleted: labelled with this graph (and
//     the driver's labels) and this owner's UID, written by
//     Options.FieldManager (managedFields, whose managers' names TrimCache
//     keeps), and not marked contract.AnnotationReleased. Anything else is
//     left alone and forgotten by the index.
//   - Each delete carries the child's UID and resourceVersion as seen, so
//     an object changed or replaced since is not deleted.
//   - Children go in the graph's deletion waves (reverse DAG order), those
//     of nodes the graph no longer has first, across clusters, as the
//     finalizer does; a cluster that does not answer holds the collection,
//     which is retried with backoff.
//   - While the graph is being removed with its instances released
//     (Config.Released), nothing is collected.
//
// What is not found: children of a kind the graph no longer renders whose
// instance went while no process served it (nothing lists kinds the graph
// does not have once the instance that named them is gone).

const (
	// orphanMaxRetry caps the backoff of a suspect whose check failed.
	orphanMaxRetry = 5 * time.Minute
	// orphanConcurrency is how many suspects of one engine are looked at
	// at once: a mass deletion by hand is collected in
	// seconds without taking the cluster's API server from reconciles.
	orphanConcurrency = 4
	// orphanEventNames bounds the children an event names.
	orphanEventNames = 10
)

// orphansCollected counts the children collected, by the cluster they were
// in. Its name keeps the spoke runtime's, where it was first counted.
var orphansCollected = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fleetgraph_spoke_orphans_collected_total",
	Help: "Children deleted because their instance no longer exists, by graph, cluster and kind.",
}, []string{"graph", "cluster", "kind"})

func init() { metrics.Registry.MustRegister(orphansCollected) }

// ForgetMetrics drops the engine's series of one graph on one cluster,
// when the graph stops being served there.
func ForgetMetrics(graphName, cluster string) {
	orphansCollected.DeletePartialMatch(prometheus.Labels{"graph": graphName, "cluster": cluster})
}

// orphanage holds one engine's suspects: owner UIDs whose instance may be
// gone, each with the time it is next looked at.
type orphanage struct {
	e     *Engine
	grace time.Duration

	mu       sync.Mutex
	suspects map[types.UID]*suspect
	timer    *time.Timer
	at       time.Time // when timer fires; zero when not armed
	running  bool      // a pass is under way; it arms the timer when done
	stopped  bool
	passes   sync.WaitGroup
}

type suspect struct {
	due  time.Time
	busy bool // a worker of the pass has it in hand
	// hurried: a child went while a worker had it in hand; it is looked
	// at again at once.
	hurried bool
	// confirmed: a live read showed the instance gone; its children are
	// being deleted, wave by wave.
	confirmed bool
	failures  int
	// instance names the gone instance, from its children's labels;
	// deleted lists the children deleted so far, for the event.
	instance types.NamespacedName
	deleted  []string
}

func newOrphanage(e *Engine) *orphanage {
	return &orphanage{e: e, grace: e.opts.OrphanGrace}
}

// suspect notes that owner's instance may be gone; it is looked at after
// the grace period. A suspect already noted keeps its time.
func (o *orphanage) suspect(owner types.UID) {
	if o == nil || o.grace < 0 || owner == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped || o.suspects[owner] != nil {
		return
	}
	if o.suspects == nil {
		o.suspects = map[types.UID]*suspect{} // most members never need one
	}
	due := time.Now().Add(o.grace)
	o.suspects[owner] = &suspect{due: due}
	o.armLocked(due)
}

// childGone hurries a confirmed suspect when one of its children went:
// the next wave may start.
func (o *orphanage) childGone(owner types.UID) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.suspects[owner]
	switch {
	case s == nil || !s.confirmed || o.stopped:
	case s.busy:
		s.hurried = true // settle would put it off again
	default:
		s.due = time.Now()
		o.armLocked(s.due)
	}
}

// armLocked makes the timer fire by due, unless a pass is running (it
// arms the timer for what is left when it ends).
func (o *orphanage) armLocked(due time.Time) {
	if o.running || o.stopped || (!o.at.IsZero() && !due.Before(o.at)) {
		return
	}
	o.at = due
	if o.timer == nil {
		o.timer = time.AfterFunc(time.Until(due), o.pass)
		return
	}
	o.timer.Reset(time.Until(due))
}

// stop ends the orphanage with its engine and waits for a pass under way
// (its calls end with the engine's context).
func (o *orphanage) stop() {
	o.mu.Lock()
	o.stopped = true
	if o.timer != nil {
		o.timer.Stop()
	}
	o.mu.Unlock()
	o.passes.Wait()
}

// pass looks at every suspect that is due, one after another, then arms
// the timer for the next one.
func (o *orphanage) pass() {
	o.mu.Lock()
	if o.running || o.stopped {
		o.mu.Unlock()
		return
	}
	o.running, o.at = true, time.Time{}
	o.passes.Add(1)
	o.mu.Unlock()
	defer o.passes.Done()

	var workers sync.WaitGroup
	for range orphanConcurrency {
		workers.Go(func() {
			for o.e.ctx.Err() == nil {
				owner, s := o.nextDue()
				if s == nil {
					return
				}
				o.settle(owner, s, o.look(owner, s))
			}
		})
	}
	workers.Wait()

	o.mu.Lock()
	defer o.mu.Unlock()
	o.running = false
	var next time.Time
	for _, s := range o.suspects {
		if next.IsZero() || s.due.Before(next) {
			next = s.due
		}
	}
	if !next.IsZero() {
		o.armLocked(next)
	}
}

// nextDue hands out a suspect that is due and that no other worker of the
// pass has in hand.
func (o *orphanage) nextDue() (types.UID, *suspect) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	for owner, s := range o.suspects {
		if !s.busy && !s.due.After(now) {
			s.busy = true
			return owner, s
		}
	}
	return "", nil
}

// settle forgets a suspect that needs nothing more (after 0) or sets when
// it is looked at again.
func (o *orphanage) settle(owner types.UID, s *suspect, after time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s.busy = false
	if after <= 0 {
		delete(o.suspects, owner)
		return
	}
	if s.hurried {
		s.hurried, after = false, 0
	}
	s.due = time.Now().Add(after)
}

// look is one look at a suspect: it returns 0 when nothing is left to do
// (the instance exists, or its children are gone), else when to look
// again.
func (o *orphanage) look(owner types.UID, s *suspect) time.Duration {
	e := o.e
	if e.cfg.Released != nil && e.cfg.Released() {
		return 0 // released instances keep their children
	}
	var children []Entry
	for _, p := range e.places.all() {
		children = append(children, p.owned.ownedBy(owner, p.c.name)...)
	}
	if len(children) == 0 {
		o.reportCollected(owner, s)
		return 0
	}
	if _, live := e.instances.instanceOf(owner); live {
		return 0
	}
	if !s.confirmed {
		if !o.instancesListed() {
			return o.grace
		}
		instance, gone, err := o.ownerGone(owner, children)
		if err != nil {
			return o.failed(owner, s, err)
		}
		if !gone {
			return 0 // the instance watch has not caught up; it reports a deletion
		}
		o.mu.Lock()
		s.confirmed, s.instance = true, instance
		o.mu.Unlock()
	}
	waiting, err := o.collectWaves(owner, children, s)
	if err != nil {
		return o.failed(owner, s, err)
	}
	s.failures = 0
	if waiting {
		// A child's delete event hurries this (childGone).
		return e.cfg.DeletionPoll
	}
	o.reportCollected(owner, s)
	return 0
}

// failed logs a failed look and returns the backoff before the next one.
func (o *orphanage) failed(owner types.UID, s *suspect, err error) time.Duration {
	s.failures++
	delay := min(o.e.cfg.RetryBase<<min(s.failures, 16), orphanMaxRetry)
	o.e.log.Info("could not collect the children of a gone instance; retrying",
		"instanceUID", owner, "reason", err.Error(), "retry", delay)
	return delay
}
