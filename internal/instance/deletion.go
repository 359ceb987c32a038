package instance

import (
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// Finalize deletes a deleting instance's children wave by wave, in reverse
// DAG order, across every cluster of clusters: a wave starts only when
// every child of the previous one is gone everywhere. Then our finalizer
// is taken off and the instance forgotten. It returns when to look again
// while it waits (or sooner, on a child's delete event).
//
// The status says DELETING:
//
//   - at once, before any other cluster is called, for an instance whose
//     children live in clusters besides its own: one of them may hang, and
//     the instance must not read ACTIVE meanwhile;
//   - naming the child that holds the deletion once one was already being
//     deleted when we looked (a child we have just asked to delete is
//     usually gone a moment later, and writing status for each wave would
//     nearly double the writes of a mass deletion in one cluster);
//   - naming the clusters it waits for while one cannot be reached
//     (abandon.go): with Config.AbandonAfter, only for that long.
func (e *Engine) Finalize(inst *unstructured.Unstructured, clusters []Reach) (time.Duration, error) {
	return deleter{e}.finalize(inst, clusters)
}

// deleter deletes an engine's deleting instances' children (Finalize),
// waiting for, and abandoning, the clusters it cannot reach (abandon.go).
type deleter struct{ e *Engine }

func (d deleter) finalize(inst *unstructured.Unstructured, clusters []Reach) (time.Duration, error) {
	e := d.e
	key := keyOf(inst)
	if !slices.Contains(inst.GetFinalizers(), contract.Finalizer) {
		e.ForgetInstance(key, inst.GetUID())
		return 0, nil
	}
	inst, err := d.announceDeletion(inst, clusters)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	since := unreachableSince(inst, now)
	overdue := d.graceOver(since, now)
	entries, downs, err := d.deletionInventory(inst, clusters)
	if err != nil {
		return 0, err
	}
	// A cluster is abandoned only when its grace is over and it did not
	// answer in this very pass (abandon.go).
	abandoned, downs := sortDowns(downs, overdue)
	for i, wave := range deletionWaves(e.g, entries) {
		blocker, held, waveDowns, err := d.deleteWave(wave, abandoned)
		if err != nil {
			return 0, err
		}
		more, waveDowns := sortDowns(waveDowns, overdue)
		abandoned = append(abandoned, more...)
		// While a cluster does not answer, what it holds is not known:
		// only the graph's first wave (and the children of nodes it no
		// longer has, wave 0) may go, which nothing must precede.
		if downs = append(downs, waveDowns...); len(downs) > 0 && (i > 0 || blocker != nil) {
			return d.waitFor(inst, since, abandoned, downs)
		}
		if blocker != nil {
			return d.deletionHeld(inst, since, abandoned, blocker, held)
		}
	}
	if len(downs) > 0 {
		return d.waitFor(inst, since, abandoned, downs)
	}
	if _, err := e.RemoveFinalizer(inst); err != nil {
		if apierrors.IsNotFound(err) {
			err = nil // gone already
		}
		return 0, err
	}
	if len(abandoned) > 0 {
		// Once the finalizer is off, so that a write that failed (and is
		// retried) does not report it twice.
		d.reportAbandoned(inst, abandoned, since)
	}
	e.ForgetInstance(key, inst.GetUID())
	return 0, nil
}

// announceDeletion writes the DELETING state before anything is deleted,
// for an instance whose children live in clusters besides its own.
func (d deleter) announceDeletion(inst *unstructured.Unstructured, clusters []Reach) (*unstructured.Unstructured, error) {
	e := d.e
	if state, _, _ := unstructured.NestedString(inst.Object, "status", "state"); state == contract.StateDeleting {
		return inst, nil
	}
	if !slices.ContainsFunc(clusters, func(r Reach) bool { return r.Cluster != e.home }) {
		return inst, nil
	}
	msg := "deleting its children in " + fmt.Sprint(len(clusters)) + " clusters"
	out, err := statusWriter{e}.conditions(inst, contract.StateDeleting, deletingConditions(ReasonDeleting, msg))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// deletionInventory returns the instance's children in every cluster it
// can reach, and the clusters it cannot reach.
func (d deleter) deletionInventory(inst *unstructured.Unstructured, clusters []Reach) ([]Entry, []down, error) {
	e := d.e
	var entries []Entry
	var downs []down
	for _, r := range clusters {
		if r.Err != nil {
			downs = append(downs, down{cluster: r.Name, err: r.Err})
			continue
		}
		children, err := e.places.of(e, r.Cluster).inventory(inst)
		if unreachable(err) {
			downs = append(downs, down{cluster: r.Name, err: err})
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, children...)
	}
	return entries, downs, nil
}

// deletionHeld is a deletion that waits for blocker to go: the status
// names it when it was already being deleted (held), or always for an
// instance whose children span clusters.
func (d deleter) deletionHeld(inst *unstructured.Unstructured, since map[string]time.Time, abandoned []string, blocker *Entry, held bool) (time.Duration, error) {
	e := d.e
	if err := d.recordSince(inst, onlyAbandoned(since, abandoned)); err != nil {
		return 0, err // every cluster was reached: none waits any more
	}
	if !held {
		return e.cfg.DeletionPoll, nil
	}
	msg := "deleting: waiting for " + blocker.describe(e.home.name) + " to be deleted"
	if err := e.WriteConditions(inst, contract.StateDeleting, deletingConditions(ReasonDeleting, msg)); err != nil {
		return 0, err
	}
	return e.cfg.DeletionPoll, nil
}

// describe names a child for messages, with its cluster when it is not
// the instance's own, home.
func (en Entry) describe(home string) string {
	if en.Cluster == home {
		return en.String()
	}
	return fmt.Sprintf("%s %s in %s (node %s)", en.Kind, en.objectName(), displayName(en.Cluster), en.Node)
}

// deletionWaves groups entries by g's deletion waves; entries of nodes g
// no longer has go first.
func deletionWaves(g *graph.Graph, inv []Entry) [][]Entry {
	wave := map[string]int{}
	for i, nodes := range g.DeletionWaves {
		for _, n := range nodes {
			wave[n.ID] = i + 1
		}
	}
	out := make([][]Entry, len(g.DeletionWaves)+1)
	for _, en := range inv {
		i := wave[en.Node]
		out[i] = append(out[i], en)
	}
	return out
}

// deleteWave asks for every child of the wave to be deleted, but those in
// abandoned clusters, and returns the first one still present, or nil when
// the wave is gone; held reports that it was being deleted already (not
// just now, by us). Clusters that did not answer are returned, and their
// children count as present.
func (d deleter) deleteWave(wave []Entry, abandoned []string) (blocker *Entry, held bool, downs []down, err error) {
	e := d.e
	for i, en := range wave {
		if slices.Contains(abandoned, en.Cluster) || slices.ContainsFunc(downs, func(d down) bool { return d.cluster == en.Cluster }) {
			continue
		}
		p := e.places.named(en.Cluster)
		if p == nil {
			continue // forgotten meanwhile: its next inventory finds it
		}
		gone, asked, err := p.deleteIfPresent(en)
		if unreachable(err) {
			downs = append(downs, down{cluster: en.Cluster, err: err})
			continue
		}
		if err != nil {
			return nil, false, nil, err
		}
		if !gone && (blocker == nil || !asked && !held) {
			blocker, held = &wave[i], !asked
		}
	}
	return blocker, held, downs, nil
}

// deleteIfPresent reports whether the child is gone, asking the API server
// to delete it if it is present and not being deleted yet (asked). A child
// is present while the owned index has it (its delete event removes it);
// one the cache shows as being deleted is waited for.
func (p *place) deleteIfPresent(en Entry) (gone, asked bool, err error) {
	if !p.owned.owns(en.key()) {
		return true, false, nil
	}
	if !p.e.kinds.has(en.gvk()) {
		// Not watched (see extraKinds): the accepted delete is all we see.
		err = p.deleteChild(en)
		p.dropChild(en.key())
		return err == nil, true, err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(en.gvk())
	ctx, cancel := p.callCtx()
	defer cancel()
	err = p.c.GetCache().Get(ctx, types.NamespacedName{Namespace: en.Namespace, Name: en.Name}, obj)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return false, false, err
	case err == nil && obj.DeletionTimestamp != nil:
		return false, false, nil
	}
	if err := p.deleteChild(en); err != nil {
		return false, true, err
	}
	return !p.owned.owns(en.key()), true, nil
}
