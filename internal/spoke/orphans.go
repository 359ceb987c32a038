package spoke

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// This file collects orphans: children whose owning instance no longer
// exists. The finalizer deletes an instance's children, but an instance
// whose finalizer is removed by hand (the usual way to "unstick" one), a
// deletion interrupted that way half-done, or an apply that raced with
// the instance's deletion leave children that nothing would ever delete.
//
// Finding them costs no request. The owned index (owned.go), kept from the
// child kinds' metadata watches, already groups children by the UID in
// their contract.LabelInstanceUID, and the instance watch says which UIDs
// exist. An owner UID becomes a suspect when the instance watch reports its
// instance deleted (or its name taken by a new UID), and when a child is
// recorded for a UID the instance watch does not hold (a child seen at
// start after the hub restarted, or applied after its instance went). A
// suspect is looked at once Options.OrphanGrace has passed; nothing runs
// meanwhile (one timer per cluster and graph, and no goroutine until it
// fires), so a cluster with nothing to collect costs nothing.
//
// Deleting is careful, because a wrong delete loses a tenant's data:
//
//   - The instance watch must have its initial list, and a live read (GET
//     of the instance by the name in the child's labels, or a list of the
//     namespace's instances when that label was shortened) must show that
//     no instance has the UID: a cache that has not caught up never
//     condemns a child. UIDs are never reused, so once confirmed, gone is
//     gone; a read that fails is retried with backoff (an unreachable
//     spoke keeps its children).
//   - Only a child that is ours is deleted: labelled with this graph and
//     this owner's UID, written by Options.FieldManager (managedFields,
//     whose managers' names TrimCache keeps), and not marked
//     contract.AnnotationReleased. Anything else is left alone and
//     forgotten by the index.
//   - Each delete carries the child's UID and resourceVersion as seen, so
//     an object changed or replaced since is not deleted.
//   - Children go in the graph's deletion waves (reverse DAG order), those
//     of nodes the graph no longer has first, as the finalizer does.
//   - While the graph is being removed with its instances released
//     (graph.RemovalRelease), nothing is collected.
//
// What is not found: children of a kind the graph no longer renders whose
// instance went while no process served it (nothing lists kinds the graph
// does not have once the instance that named them is gone).

const (
	// orphanMaxRetry caps the backoff of a suspect whose check failed.
	orphanMaxRetry = 5 * time.Minute
	// orphanConcurrency is how many suspects of one graph on one cluster
	// are looked at at once: a mass deletion by hand is collected in
	// seconds without taking the cluster's API server from reconciles.
	orphanConcurrency = 4
	// orphanEventNames bounds the children an event names.
	orphanEventNames = 10
)

var orphansCollected = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fleetgraph_spoke_orphans_collected_total",
	Help: "Children deleted because their instance no longer exists, by graph, cluster and kind.",
}, []string{"graph", "cluster", "kind"})

func init() { metrics.Registry.MustRegister(orphansCollected) }

// orphanage holds one member's suspects: owner UIDs whose instance may be
// gone, each with the time it is next looked at.
type orphanage struct {
	m     *member
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

func newOrphanage(m *member) *orphanage {
	return &orphanage{m: m, grace: m.c.opts.OrphanGrace}
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

// stop ends the orphanage with its member and waits for a pass under way
// (its calls end with the member's context).
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
			for o.m.ctx.Err() == nil {
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
	m := o.m
	if m.g.Removal == graph.RemovalRelease {
		return 0 // released instances keep their children
	}
	children := m.ownedBy(owner)
	if len(children) == 0 {
		m.reportCollected(owner, s)
		return 0
	}
	if _, live := m.instanceOf(owner); live {
		return 0
	}
	if !s.confirmed {
		if !m.instancesListed() {
			return o.grace
		}
		instance, gone, err := m.ownerGone(owner, children)
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
	waiting, err := m.collectWaves(owner, children, s)
	if err != nil {
		return o.failed(owner, s, err)
	}
	s.failures = 0
	if waiting {
		// A child's delete event hurries this (childGone).
		return m.c.opts.DeletionPoll
	}
	m.reportCollected(owner, s)
	return 0
}

// failed logs a failed look and returns the backoff before the next one.
func (o *orphanage) failed(owner types.UID, s *suspect, err error) time.Duration {
	s.failures++
	delay := min(o.m.c.opts.GateRetry<<min(s.failures, 16), orphanMaxRetry)
	o.m.log.Info("could not collect the children of a gone instance; retrying",
		"instanceUID", owner, "reason", err.Error(), "retry", delay)
	return delay
}

// instancesListed reports whether the instance watch runs with its initial
// list: before that, an instance missing from it proves nothing.
func (m *member) instancesListed() bool {
	select {
	case <-m.ready:
	default:
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.rewatching
}

// ownerGone asks the API server whether the instance with UID owner is
// gone, by the name and namespace its children's labels give, which it
// returns.
func (m *member) ownerGone(owner types.UID, children []InventoryEntry) (types.NamespacedName, bool, error) {
	var labels map[string]string
	for _, e := range children {
		meta, err := m.childMeta(e)
		if err != nil {
			return types.NamespacedName{}, false, err
		}
		if meta != nil && meta.Labels[contract.LabelInstanceUID] == string(owner) {
			labels = meta.Labels
			break
		}
	}
	if labels == nil {
		return types.NamespacedName{}, false, nil // no child says where its instance is: leave them
	}
	key := types.NamespacedName{Namespace: labels[contract.LabelInstanceNamespace], Name: labels[contract.LabelInstanceName]}
	ctx, cancel := m.callCtx()
	defer cancel()
	if key.Name != "" {
		inst := &metav1.PartialObjectMetadata{}
		inst.SetGroupVersionKind(m.g.Instance.GVK)
		err := m.cl.GetAPIReader().Get(ctx, key, inst)
		switch {
		case err == nil && inst.UID == owner:
			return key, false, nil
		case err != nil && !apierrors.IsNotFound(err):
			return key, false, fmt.Errorf("reading instance %s: %w", key, err)
		case len(key.Name) < maxNameLabel:
			return key, true, nil // the label holds the whole name: nothing else can be it
		}
	}
	gone, err := m.noInstanceWithUID(ctx, key.Namespace, owner)
	return key, gone, err
}

// maxNameLabel is the length of a name label that may have been shortened
// by contract.LabelValue.
const maxNameLabel = 63

// noInstanceWithUID lists the namespace's instances (metadata, by pages)
// and reports whether none has the UID: for an instance whose name label
// was shortened, so that a GET by it proves nothing.
func (m *member) noInstanceWithUID(ctx context.Context, ns string, owner types.UID) (bool, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(m.g.Instance.GVK.GroupVersion().WithKind(m.g.Instance.GVK.Kind + "List"))
	opts := []client.ListOption{client.Limit(500)}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	for {
		if err := m.cl.GetAPIReader().List(ctx, list, opts...); err != nil {
			return false, fmt.Errorf("listing instances in %q: %w", ns, err)
		}
		for _, item := range list.Items {
			if item.UID == owner {
				return false, nil
			}
		}
		if list.Continue == "" {
			return true, nil
		}
		opts = append(opts[:0], client.Limit(500), client.Continue(list.Continue))
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
	}
}

// childMeta reads a child's metadata: from the cache for the graph's kinds
// (watched), live for a kind the instance listed besides. Nil if the
// object does not exist.
func (m *member) childMeta(e InventoryEntry) (*metav1.PartialObjectMetadata, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(e.gvk())
	ctx, cancel := m.callCtx()
	defer cancel()
	key := types.NamespacedName{Namespace: e.Namespace, Name: e.Name}
	var err error
	if m.graphKind(e.gvk()) {
		err = m.cl.GetCache().Get(ctx, key, meta)
	} else {
		err = m.cl.GetAPIReader().Get(ctx, key, meta)
	}
	if apierrors.IsNotFound(err) || isNoMatch(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", e, err)
	}
	meta.SetGroupVersionKind(e.gvk())
	return meta, nil
}

// collectWaves deletes the children of a gone instance wave by wave. It
// reports waiting while a wave still has a child present.
func (m *member) collectWaves(owner types.UID, children []InventoryEntry, s *suspect) (waiting bool, err error) {
	for _, wave := range m.deletionWaves(children) {
		present := false
		for _, e := range wave {
			p, err := m.collectChild(owner, e, s)
			if err != nil {
				return false, err
			}
			present = present || p
		}
		if present {
			return true, nil
		}
	}
	return false, nil
}

// collectChild deletes one child of a gone instance if it is ours, and
// reports whether it is still present (being deleted).
func (m *member) collectChild(owner types.UID, e InventoryEntry, s *suspect) (present bool, err error) {
	c, ok := m.indexed(e.key())
	if !ok || c.owner != owner {
		return false, nil
	}
	meta, err := m.childMeta(e)
	if err != nil {
		return false, err
	}
	if meta == nil {
		m.dropChild(e.key())
		return false, nil
	}
	if why := m.notCollectable(owner, c, meta); why != "" {
		m.log.V(1).Info("child of a gone instance left alone", "child", e.String(), "reason", why)
		m.dropChild(e.key())
		return false, nil
	}
	if meta.DeletionTimestamp != nil {
		return true, nil
	}
	ctx, cancel := m.callCtx()
	defer cancel()
	err = m.cl.GetClient().Delete(ctx, meta, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &meta.UID, ResourceVersion: &meta.ResourceVersion})
	switch {
	case apierrors.IsNotFound(err):
		m.dropChild(e.key())
		return false, nil
	case apierrors.IsConflict(err):
		return true, nil // changed since the cache saw it: looked at again
	case err != nil:
		return false, fmt.Errorf("deleting %s: %w", e, err)
	}
	orphansCollected.WithLabelValues(m.g.Name, m.cluster.String(), e.Kind).Inc()
	m.log.Info("deleted a child whose instance no longer exists", "child", e.String(),
		"instance", s.instance.String(), "instanceUID", owner)
	s.deleted = append(s.deleted, e.Kind+" "+e.objectName())
	return true, nil
}

// notCollectable says why a child of a gone instance must not be deleted,
// or "" if it may.
func (m *member) notCollectable(owner types.UID, c ownedChild, meta *metav1.PartialObjectMetadata) string {
	l := meta.Labels
	switch {
	case c.uid != "" && meta.UID != c.uid:
		return "another object has its name now"
	case l[contract.LabelGraph] != m.graphLabel || l[contract.LabelInstanceUID] != string(owner):
		return "not labelled as the instance's child"
	case meta.Annotations[contract.AnnotationReleased] == "true":
		return "left in place when its instance was released"
	case !slices.ContainsFunc(meta.ManagedFields, func(f metav1.ManagedFieldsEntry) bool {
		return f.Manager == m.c.opts.FieldManager
	}):
		return fmt.Sprintf("not written by field manager %q", m.c.opts.FieldManager)
	}
	return ""
}

// reportCollected records an event on the gone instance naming the
// children deleted because it is gone: one event per instance, not per
// child, so that collecting a mass deletion writes few events.
func (m *member) reportCollected(owner types.UID, s *suspect) {
	if len(s.deleted) == 0 {
		return
	}
	names := strings.Join(s.deleted[:min(len(s.deleted), orphanEventNames)], ", ")
	if more := len(s.deleted) - orphanEventNames; more > 0 {
		names += fmt.Sprintf(" and %d more", more)
	}
	inst := &metav1.PartialObjectMetadata{}
	inst.SetGroupVersionKind(m.g.Instance.GVK)
	inst.SetNamespace(s.instance.Namespace)
	inst.SetName(s.instance.Name)
	inst.SetUID(owner)
	m.recorder.Eventf(inst, nil, corev1.EventTypeNormal, reasonOrphansDeleted, "Delete",
		"deleted %d children left behind (%s): the instance (uid %s) of graph %q no longer exists",
		len(s.deleted), names, owner, m.g.Name)
	s.deleted = nil
}

// reasonOrphansDeleted is the reason of the event on a gone instance whose
// children were collected.
const reasonOrphansDeleted = "OrphansDeleted"

// startOrphanage runs once the instance watch has its initial list. The
// child watches start with the first reconcile that needs them, which a
// cluster without instances never has: there, after a restart, children
// of instances deleted meanwhile would go unseen. So on such a cluster
// each of the graph's kinds is asked once, for one object with the graph's
// label, and watched if it has one.
func (m *member) startOrphanage() {
	o := m.orphans
	if o.grace < 0 || m.g.Removal == graph.RemovalRelease || m.count().Total > 0 {
		return
	}
	o.mu.Lock()
	if o.stopped {
		o.mu.Unlock()
		return
	}
	o.passes.Add(1)
	o.mu.Unlock()
	go func() {
		defer o.passes.Done()
		for _, k := range m.kinds {
			if m.hasLabelledChild(k) {
				if err := m.ensureWatch(k); err != nil && !errors.Is(err, errWatchStarting) {
					m.log.V(1).Info("not watching a child kind for orphans", "kind", k.String(), "reason", err.Error())
				}
			}
		}
	}()
}

// hasLabelledChild asks the API server for one object of kind k labelled
// as one of the graph's children.
func (m *member) hasLabelledChild(k schema.GroupVersionKind) bool {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
	ctx, cancel := m.callCtx()
	defer cancel()
	err := m.cl.GetAPIReader().List(ctx, list, client.MatchingLabels{contract.LabelGraph: m.graphLabel}, client.Limit(1))
	return err == nil && len(list.Items) > 0
}
