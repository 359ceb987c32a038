package hubgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// Abandoning what is left on a cluster that stays unreachable: with
// Options.AbandonAfter set, a deletion held by a cluster it cannot reach
// waits that long (counted from the first time that deletion found the
// cluster unreachable, recorded on the instance so that a restart does
// not start the count again), then goes on without it. What the instance
// had there is left in place, labelled as ours; nothing is deleted that
// the runtime cannot see is ours.

// AnnotationUnreachableSince, on a hub instance being deleted, maps (as a
// JSON object) each cluster its deletion could not reach to when it first
// could not (RFC 3339). A cluster reached again is dropped from it, unless
// its grace was already over: it stays abandoned for the rest of that
// deletion.
const AnnotationUnreachableSince = "fleetgraph.dev/unreachable-since"

// ReasonChildrenAbandoned is the reason of the event written on a hub
// instance whose deletion abandoned its children on unreachable clusters.
const ReasonChildrenAbandoned = "ChildrenAbandoned"

// down is a cluster a deletion could not reach, and why.
type down struct {
	cluster string
	err     error
}

func (d down) String() string { return fmt.Sprintf("%s: %v", displayName(d.cluster), d.err) }

// unreachableSince reads AnnotationUnreachableSince.
func unreachableSince(inst *unstructured.Unstructured) map[string]time.Time {
	out := map[string]time.Time{}
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
			out[name] = t
		}
	}
	return out
}

// graceOver returns the clusters whose grace is over at now, sorted (none
// when Options.AbandonAfter is 0).
func (f *finalizer) graceOver(since map[string]time.Time, now time.Time) []string {
	grace := f.rt.opts.AbandonAfter
	if grace <= 0 {
		return nil
	}
	var out []string
	for name, at := range since {
		if name == "" {
			continue // the hub's own cluster is never abandoned
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
// deletion waits and until when, and requeues no later than the first
// grace ends.
func (f *finalizer) waitFor(ctx context.Context, inst *unstructured.Unstructured, since map[string]time.Time, abandoned []string, downs []down) (time.Duration, error) {
	now := time.Now().UTC().Truncate(time.Second)
	next := onlyAbandoned(since, abandoned)
	msgs := make([]string, 0, len(downs))
	after := unreachableRequeue
	for _, d := range downs {
		at, ok := since[d.cluster]
		if !ok {
			at = now
		}
		next[d.cluster] = at
		msg := d.String()
		if grace := f.rt.opts.AbandonAfter; grace > 0 && d.cluster != "" {
			end := at.Add(grace)
			msg += fmt.Sprintf(" (abandoned at %s, after Options.Targets.AbandonAfter %v)", end.Format(time.RFC3339), grace)
			after = min(after, max(time.Until(end), 0)+time.Second)
		}
		msgs = append(msgs, msg)
	}
	if err := f.recordSince(ctx, inst, since, next); err != nil {
		return 0, err
	}
	msg := "deletion waits for unreachable clusters: " + strings.Join(msgs, "; ")
	return after, f.deleting(ctx, inst, reasonClusterWaiting, msg)
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

// recordSince writes next as AnnotationUnreachableSince when it differs
// from have.
func (f *finalizer) recordSince(ctx context.Context, inst *unstructured.Unstructured, have, next map[string]time.Time) error {
	if maps.EqualFunc(have, next, time.Time.Equal) {
		return nil
	}
	raw := make(map[string]string, len(next))
	for name, at := range next {
		raw[name] = at.UTC().Format(time.RFC3339)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	orig := inst.DeepCopy()
	ann := maps.Clone(inst.GetAnnotations())
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationUnreachableSince] = string(b)
	inst.SetAnnotations(ann)
	cctx, cancel := f.rt.callCtx(ctx)
	defer cancel()
	return client.IgnoreNotFound(f.rt.hub().GetClient().Patch(cctx, inst, client.MergeFrom(orig)))
}

// reportAbandoned says, in an event on the instance and in the log, what
// its deletion leaves on each abandoned cluster: the children its cache
// still lists there when it has one, and always the labels that select
// them. It never names a credential: only clusters, kinds and names.
func (f *finalizer) reportAbandoned(ctx context.Context, inst *unstructured.Unstructured, abandoned []string, since map[string]time.Time) {
	sel := f.prune.owner.selector(inst, "")
	keys := slices.Sorted(maps.Keys(sel))
	pairs := make([]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, k+"="+sel[k])
	}
	for _, name := range abandoned {
		known := f.knownChildren(ctx, inst, name)
		msg := fmt.Sprintf("cluster %q unreachable since %s, abandoned after %v: its children are left there, labelled %s",
			name, since[name].Format(time.RFC3339), f.rt.opts.AbandonAfter, strings.Join(pairs, ","))
		if len(known) > 0 {
			msg += "; last known: " + strings.Join(known, ", ")
		}
		f.rt.opts.Instances.Logger.Info("abandoned a hub instance's children on an unreachable cluster",
			"instance", inst.GetNamespace()+"/"+inst.GetName(), "cluster", name, "children", known, "selector", strings.Join(pairs, ","))
		f.rt.hub().GetEventRecorder("fleetgraph").Eventf(inst, nil, corev1.EventTypeWarning, ReasonChildrenAbandoned, "Delete", "%s", truncate(msg))
	}
}

// knownChildren lists, from the cluster's cache as it last was (no call
// to the cluster: an informer not started there lists nothing), the
// instance's children in the named cluster.
func (f *finalizer) knownChildren(ctx context.Context, inst *unstructured.Unstructured, name string) []string {
	if name == "" {
		return nil
	}
	cl, err := f.rt.opts.Clusters.Cluster(ctx, name)
	if err != nil || cl == nil {
		return nil
	}
	var out []string
	for _, gvk := range contract.GraphKinds(f.g) {
		if !f.prune.watches.has(name, cl, gvk) {
			continue
		}
		cctx, cancel := f.rt.callCtx(ctx)
		items, err := f.prune.children(cctx, inst, name, cl, gvk, "")
		cancel()
		if err != nil {
			continue
		}
		for _, it := range items {
			out = append(out, fmt.Sprintf("%s %s", gvk.Kind, client.ObjectKey{Namespace: it.Namespace, Name: it.Name}))
		}
	}
	return out
}

// has reports whether gvk is watched in the named cluster's engagement
// cl: its informer then lists from memory, without a call.
func (w *watchSet) has(name string, cl cluster.Cluster, gvk schema.GroupVersionKind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, ok := w.m[watchKey{cluster: name, gvk: gvk}]
	return ok && wt.cl == cl
}

// truncate bounds an event's message.
func truncate(msg string) string {
	if len(msg) > maxMessage {
		return msg[:maxMessage] + "..."
	}
	return msg
}
