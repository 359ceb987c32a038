package instance

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// Abandoning what is left in a cluster that stays unreachable: with
// Config.AbandonAfter set, a deletion held by a cluster it cannot reach
// (other than the instance's own) waits that long, counted from the first
// time that deletion found the cluster unreachable (recorded on the
// instance so that a restart does not start the count again), then goes
// on without it.
//
// The record is an annotation, which the instance's owner can write too,
// so it is never taken on trust: a recorded time is read as no earlier
// than the instance's deletionTimestamp (which only the API server
// writes) and no later than now, and a cluster whose grace is over is
// abandoned only if it did not answer in the same pass (its inventory, or
// the deletion of its first child there, failed as unreachable). A cluster
// that answers is dropped from the record, so its count starts again from
// the hub's own next observation. What the instance had there is left in place, labelled
// as ours; nothing is deleted that the engine cannot see is ours. Once the
// cluster answers again, the orphanage collects what the engine knows is
// there (orphans.go), as it does for any gone instance.

// AnnotationUnreachableSince, on an instance being deleted, maps (as a
// JSON object) each cluster its deletion could not reach to when it first
// could not (RFC 3339). A cluster reached again is dropped from it, unless
// its grace was already over: it stays abandoned for the rest of that
// deletion.
const AnnotationUnreachableSince = "fleetgraph.dev/unreachable-since"

// ReasonChildrenAbandoned is the reason of the event written on an
// instance whose deletion abandoned its children on unreachable clusters.
const ReasonChildrenAbandoned = "ChildrenAbandoned"

// down is a cluster a deletion could not reach, and why.
type down struct {
	cluster string
	err     error
}

func (d down) String() string { return fmt.Sprintf("%s: %v", displayName(d.cluster), d.err) }

// unreachableSince reads AnnotationUnreachableSince, each time bounded to
// [the instance's deletionTimestamp, now]: a tenant-written date can
// neither start the count before the deletion did nor hold it off.
func unreachableSince(inst *unstructured.Unstructured, now time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	var from time.Time
	if ts := inst.GetDeletionTimestamp(); ts != nil {
		from = ts.UTC()
	}
	v := inst.GetAnnotations()[AnnotationUnreachableSince]
	if v == "" {
		return out
	}
	raw := map[string]string{}
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return out
	}
	for name, at := range raw {
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			if t.After(now) {
				t = now
			}
			if t.Before(from) {
				t = from
			}
			out[name] = t.UTC().Truncate(time.Second)
		}
	}
	return out
}

// graceOver returns the clusters whose grace is over at now, sorted (none
// when Config.AbandonAfter is 0): those that may be abandoned if they do
// not answer now. The instance's own cluster is never abandoned.
func (d deleter) graceOver(since map[string]time.Time, now time.Time) []string {
	e := d.e
	grace := e.cfg.AbandonAfter
	if grace <= 0 {
		return nil
	}
	var out []string
	for name, at := range since {
		if name == e.home.name {
			continue
		}
		if !now.Before(at.Add(grace)) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// waitFor records when each cluster in downs was first found unreachable
// (dropping those reached again, but not those abandoned), shows that the
// deletion waits and until when, and asks to look again no later than the
// first grace ends.
func (d deleter) waitFor(inst *unstructured.Unstructured, since map[string]time.Time, abandoned []string, downs []down) (time.Duration, error) {
	e := d.e
	now := time.Now().UTC().Truncate(time.Second)
	next := onlyAbandoned(since, abandoned)
	msgs := make([]string, 0, len(downs))
	after := e.cfg.DeletionPoll
	for _, d := range downs {
		at, ok := since[d.cluster]
		if !ok {
			at = now
		}
		next[d.cluster] = at
		msg := d.String()
		if grace := e.cfg.AbandonAfter; grace > 0 && d.cluster != e.home.name {
			end := at.Add(grace)
			msg += fmt.Sprintf(" (abandoned at %s, after Options.Targets.AbandonAfter %v)", end.Format(time.RFC3339), grace)
			after = min(after, max(time.Until(end), 0)+time.Second)
		}
		msgs = append(msgs, msg)
	}
	if err := d.recordSince(inst, next); err != nil {
		return 0, err
	}
	msg := "deletion waits for unreachable clusters: " + strings.Join(msgs, "; ")
	return after, e.WriteConditions(inst, contract.StateDeleting, deletingConditions(ReasonClusterUnreachable, msg))
}

// onlyAbandoned is since without the clusters not abandoned: what to
// record once every other cluster was reached.
func onlyAbandoned(since map[string]time.Time, abandoned []string) map[string]time.Time {
	out := map[string]time.Time{}
	for _, name := range abandoned {
		out[name] = since[name]
	}
	return out
}

// recordSince writes next as AnnotationUnreachableSince when the
// annotation says otherwise (a value someone else wrote is replaced by
// the hub's own count).
func (d deleter) recordSince(inst *unstructured.Unstructured, next map[string]time.Time) error {
	want := ""
	if len(next) > 0 {
		raw := make(map[string]string, len(next))
		for name, at := range next {
			raw[name] = at.UTC().Format(time.RFC3339)
		}
		b, err := json.Marshal(raw) // keys sorted: the same record reads the same
		if err != nil {
			return err
		}
		want = string(b)
	}
	if inst.GetAnnotations()[AnnotationUnreachableSince] == want {
		return nil
	}
	_, err := instanceWriter{d.e}.annotate(inst, AnnotationUnreachableSince, want)
	return client.IgnoreNotFound(err)
}

// sortDowns splits downs into the clusters to abandon now (their grace,
// in overdue, is over: they did not answer once more) and those still
// waited for.
func sortDowns(downs []down, overdue []string) (abandon []string, wait []down) {
	for _, dn := range downs {
		if slices.Contains(overdue, dn.cluster) {
			if !slices.Contains(abandon, dn.cluster) {
				abandon = append(abandon, dn.cluster)
			}
			continue
		}
		wait = append(wait, dn)
	}
	return abandon, wait
}

// reportAbandoned says, in an event on the instance and in the log, what
// its deletion leaves in each abandoned cluster: the children the engine
// knows there, and always the labels that select them. It never names a
// credential: only clusters, kinds and names.
func (d deleter) reportAbandoned(inst *unstructured.Unstructured, abandoned []string, since map[string]time.Time) {
	e := d.e
	sel := e.owner.selectorString(inst.GetUID())
	for _, name := range abandoned {
		known := d.knownChildren(inst, name)
		msg := fmt.Sprintf("cluster %q unreachable since %s, abandoned after %v: its children are left there, labelled %s",
			name, since[name].Format(time.RFC3339), e.cfg.AbandonAfter, sel)
		if len(known) > 0 {
			msg += "; last known: " + strings.Join(known, ", ")
		}
		e.log.Info("abandoned an instance's children on an unreachable cluster",
			"instance", keyOf(inst).String(), "cluster", name, "children", known, "selector", sel)
		e.home.recorder().Eventf(inst, nil, corev1.EventTypeWarning, ReasonChildrenAbandoned, "Delete", "%s", truncateMessage(msg))
	}
}

// knownChildren lists, from the engine's index (no call to the cluster),
// the instance's children in the named cluster.
func (d deleter) knownChildren(inst *unstructured.Unstructured, name string) []string {
	e := d.e
	p := e.places.named(name)
	if p == nil {
		return nil
	}
	var out []string
	for _, en := range p.owned.ownedBy(inst.GetUID(), name) {
		out = append(out, fmt.Sprintf("%s %s", en.Kind, en.objectName()))
	}
	return out
}
