package replicas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/shard"
)

// Labels and annotation of the per-replica status records.
const (
	// LabelFleetStatusOf marks a replica's record of one graph's fleet
	// status; its value is the graph's name (as a label value).
	LabelFleetStatusOf = "fleetgraph.dev/fleet-status-of"
	// LabelReplica names the replica that keeps the record.
	LabelReplica = "fleetgraph.dev/replica"
	// AnnotationRenewed is when the replica last confirmed the record.
	AnnotationRenewed = "fleetgraph.dev/renewed"
	recordKey         = "clusters"
)

// Status is one hub replica's share of every graph's fleet status.
// Each replica serves some of the clusters and sees only those; writing
// its own view on the RGD would overwrite the others'. Instead each keeps a
// record of its own clusters on the hub (a ConfigMap per graph and replica,
// written by no one else) and the status written on the RGD is the union
// of its own view and the other replicas' live records. Every replica
// computes the same union from the same records, so their writes agree.
type Status struct {
	// Client reads and writes the records on the hub cluster; a direct
	// (uncached) client.
	Client client.Client
	// Namespace holds the records.
	Namespace string
	// Replica is this replica's name, unique among the replicas.
	Replica string
	// TTL is how long a record counts after its last renewal: a replica
	// that died stops counting after it, by which time its clusters have
	// a new owner. Records are renewed every TTL/3.
	TTL time.Duration
	// Lone is set for a hub that runs alone: it publishes its record (the
	// CLI reads every cluster there) and merges no other.
	Lone bool

	mu        sync.Mutex
	published map[string]record // per graph, what this replica last wrote
	pruned    time.Time         // when the records were last surveyed and the expired deleted
	// peers are the replicas (as label values) that had a live record of
	// some graph at the last survey: a new graph waits for their view.
	peers map[string]bool
	// lastOwn is, per graph, this replica's view at the last Merged, and
	// handing the clusters it let go of since (see replica_handover.go).
	lastOwn map[string]map[string]hub.ClusterStatus
	handing map[string]map[string]handover
	// alive is who was alive at the last read of the peer Leases, and
	// others, per graph, the clusters other replicas serve (liveness.go).
	alive  liveness
	others map[string]map[string]Foreign
}

type record struct {
	data    string
	renewed time.Time
}

// Merged publishes own, this replica's view of the graph, and returns the
// union of it and every other replica's live record. A cluster in two
// records (during a hand-over) is taken from this replica's view, else
// from the record renewed last. A replica that keeps live records of
// other graphs but none of this one yet (the graph is new to it) is named
// in AwaitingReplicas: its clusters are not in the union yet. Every TTL/3
// it also surveys the records of every graph, to learn the replicas, and
// deletes those that expired (see prune). On a read error own is
// returned, with the error; if only the survey failed, the union is, with
// the error.
func (r *Status) Merged(ctx context.Context, own hub.GraphStatus) (hub.GraphStatus, error) {
	if r.Lone {
		return own, r.publish(ctx, own)
	}
	mine := own.Clusters
	own = r.withHandovers(own, time.Now())
	if err := r.publish(ctx, own); err != nil {
		return own, err
	}
	now := time.Now()
	surveyErr := r.surveyIfDue(ctx, now)
	list := &corev1.ConfigMapList{}
	err := r.Client.List(ctx, list, client.InNamespace(r.Namespace),
		client.MatchingLabels{LabelFleetStatusOf: contract.LabelValue(own.Graph)})
	if err != nil {
		return own, fmt.Errorf("listing the replicas' fleet status of graph %s: %w", own.Graph, err)
	}
	r.takenOver(own.Graph, list.Items, now)
	merged, from := r.mergeWith(own, list.Items, now, r.readLiveness(ctx, now))
	merged.AwaitingReplicas = r.awaiting(list.Items, now)
	r.setOthers(own.Graph, mine, merged.Clusters, from)
	return merged, surveyErr
}

// awaiting returns the peers, other than this replica, without a live
// record among records (one graph's), sorted.
func (r *Status) awaiting(records []corev1.ConfigMap, now time.Time) []string {
	heard := map[string]bool{contract.LabelValue(r.Replica): true}
	for i := range records {
		if !isExpired(&records[i], r.TTL, now) {
			heard[records[i].Labels[LabelReplica]] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for peer := range r.peers {
		if !heard[peer] {
			out = append(out, peer)
		}
	}
	slices.Sort(out)
	return out
}

// expired returns the records that were not renewed within ttl: they
// count for nothing in the merge, and a replica that is alive renews its
// own every ttl/3. That includes this replica's own records of graphs it
// no longer serves (deleted while it was down, say); one of a graph it
// still serves is written again at its next publish, since the last
// write is as old as the record. Only records we wrote (managed-by
// fleetgraph) are returned. Renewals are stamped with the writer's clock:
// replicas' clocks must agree to well within ttl.
func expired(records []metav1.PartialObjectMetadata, ttl time.Duration, now time.Time) []metav1.PartialObjectMetadata {
	var out []metav1.PartialObjectMetadata
	for _, m := range records {
		ours := m.Labels[contract.LabelManagedBy] == contract.ManagedBy
		if ours && isExpired(&m, ttl, now) {
			out = append(out, m)
		}
	}
	return out
}

// surveyIfDue reads, at most every TTL/3, the records of every graph: the
// replicas with a live record are the peers, and the records that expired
// are deleted: those of replicas that are gone (a killed pod's replacement
// has another name, a scaled-away replica has none) and of graphs that
// were deleted, which no one renews. They count for nothing already;
// deleting them keeps them from piling up on the hub. Only metadata is
// read.
func (r *Status) surveyIfDue(ctx context.Context, now time.Time) error {
	r.mu.Lock()
	due := now.Sub(r.pruned) >= r.TTL/3
	if due {
		r.pruned = now
	}
	r.mu.Unlock()
	if !due {
		return nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	err := r.Client.List(ctx, list, client.InNamespace(r.Namespace), client.HasLabels{LabelFleetStatusOf})
	if err != nil {
		return fmt.Errorf("listing the replicas' fleet status records: %w", err)
	}
	r.setPeers(peersOf(list.Items, r.TTL, now))
	return r.prune(ctx, expired(list.Items, r.TTL, now))
}

func (r *Status) setPeers(peers map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.peers = peers
}

// peersOf returns the replicas with a live record of ours among records.
func peersOf(records []metav1.PartialObjectMetadata, ttl time.Duration, now time.Time) map[string]bool {
	out := map[string]bool{}
	for i := range records {
		m := &records[i]
		if m.Labels[contract.LabelManagedBy] == contract.ManagedBy && !isExpired(m, ttl, now) {
			out[m.Labels[LabelReplica]] = true
		}
	}
	return out
}

// Forget deletes this replica's record of a graph that was removed, so
// that it neither counts nor waits a TTL for a prune. A record that is
// already gone is no error; an object of that name that is not this
// replica's record is left alone.
func (r *Status) Forget(ctx context.Context, graph string) error {
	r.mu.Lock()
	delete(r.published, graph)
	delete(r.lastOwn, graph) // a tenant's RGDs come and go: keep nothing of a removed one
	delete(r.handing, graph)
	delete(r.others, graph)
	r.mu.Unlock()
	cur, err := r.ownRecord(ctx, graph)
	if errors.Is(err, ErrNotOurRecord) {
		return nil
	}
	if err != nil || cur == nil {
		return err
	}
	err = r.Client.Delete(ctx, cur, client.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting replica %s's fleet status record of removed graph %s: %w", r.Replica, graph, err)
	}
	return nil
}

// ErrNotOurRecord is returned when an object has the name of a replica's
// status record but that replica did not write it: it is neither
// overwritten nor deleted.
var ErrNotOurRecord = errors.New("not this replica's fleet status record")

// ownRecord reads the metadata of this replica's record of graph: nil
// when there is none, and ErrNotOurRecord when the object of its name was
// not written by this replica.
func (r *Status) ownRecord(ctx context.Context, graph string) (*metav1.PartialObjectMetadata, error) {
	cur := &metav1.PartialObjectMetadata{}
	cur.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.recordName(graph)}, cur)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading replica %s's fleet status record of graph %s: %w", r.Replica, graph, err)
	}
	labels := cur.GetLabels()
	if labels[contract.LabelManagedBy] != contract.ManagedBy || labels[LabelReplica] != contract.LabelValue(r.Replica) {
		return cur, fmt.Errorf("ConfigMap %s/%s: %w", cur.Namespace, cur.Name, ErrNotOurRecord)
	}
	return cur, nil
}

// prune deletes the stale records, each fenced on its resourceVersion: a
// record its replica renewed since it was read stays. A failed delete is
// retried at the next prune, which finds the same record expired.
func (r *Status) prune(ctx context.Context, stale []metav1.PartialObjectMetadata) error {
	var errs []error
	for _, m := range stale {
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		err := r.Client.Delete(ctx, &m, client.Preconditions{UID: &m.UID, ResourceVersion: &m.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting the expired fleet status record %s/%s of replica %s: %w",
				m.Namespace, m.Name, m.Labels[LabelReplica], err))
		}
	}
	return errors.Join(errs...)
}

func (r *Status) merge(own hub.GraphStatus, records []corev1.ConfigMap, now time.Time) hub.GraphStatus {
	merged, _ := r.mergeWith(own, records, now, liveness{})
	return merged
}

// mergeWith is the union of own and the live records: every cluster once,
// taken from this replica's view, else from the freshest record of a
// replica alive, else from one of a replica that stopped (marked
// ReasonReplicaGone), and only then from one handing the cluster over.
// It also returns, per cluster taken from a record, that record's
// replica.
func (r *Status) mergeWith(own hub.GraphStatus, records []corev1.ConfigMap, now time.Time, alive liveness) (hub.GraphStatus, map[string]string) {
	slices.SortFunc(records, func(a, b corev1.ConfigMap) int { return renewed(&b).Compare(renewed(&a)) }) // freshest first
	views := []view{{clusters: own.Clusters}}
	var dead []view
	for i := range records {
		cm := &records[i]
		if cm.Labels[LabelReplica] == r.ownLabel() || isExpired(cm, r.TTL, now) {
			continue
		}
		if alive.gone(cm) {
			dead = append(dead, view{cm.Labels[LabelReplica], orphaned(cm, decodeRecord(cm))})
			continue
		}
		views = append(views, view{cm.Labels[LabelReplica], decodeRecord(cm)})
	}
	views = append(views, dead...)
	out := own
	out.Clusters = nil
	from := map[string]string{}
	seen := map[string]bool{}
	last := lastWords(views[1:])
	for _, handingOver := range []bool{false, true} {
		for i, v := range views {
			for _, c := range v.clusters {
				if c.HandingOver != handingOver || seen[c.Cluster] {
					continue
				}
				seen[c.Cluster] = true
				from[c.Cluster] = v.replica
				if was, ok := last[c.Cluster]; i == 0 && unobserved(c) && ok {
					c, from[c.Cluster] = takingOver(was, r.Replica), was.replica
				}
				out.Clusters = append(out.Clusters, c)
			}
		}
	}
	slices.SortFunc(out.Clusters, func(a, b hub.ClusterStatus) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out, from
}

// A replica that has just taken a cluster over (from one that stopped, or
// let it go) lists it unserved or uncounted until its gate and its
// instance watch there have run: seconds on a loaded hub, during which the
// instances are all still there. The union then keeps the last word of
// the replica that served the cluster (marked HandingOver), rather than
// drop its counts.

// view is one replica's clusters ("" is this replica's own).
type view struct {
	replica  string
	clusters []hub.ClusterStatus
}

// lastWord is a cluster as another replica's record last served it.
type lastWord struct {
	replica string
	cluster hub.ClusterStatus
}

// lastWords returns, per cluster, the first entry of views (other
// replicas') that serves it.
func lastWords(views []view) map[string]lastWord {
	out := map[string]lastWord{}
	for _, v := range views {
		for _, c := range v.clusters {
			if _, ok := out[c.Cluster]; !ok && c.Serving && !c.Uncounted {
				out[c.Cluster] = lastWord{v.replica, c}
			}
		}
	}
	return out
}

// unobserved reports whether this replica's entry of a cluster says
// nothing yet: no version serves it, or its instances are not counted
// yet.
func unobserved(c hub.ClusterStatus) bool {
	return !c.Serving || c.Uncounted
}

// takingOver is was, the last word of the replica that served a cluster,
// as shown while replica (this one) takes the cluster over.
func takingOver(was lastWord, replica string) hub.ClusterStatus {
	c := was.cluster
	last := c.Why
	if c.Reason == hub.ReasonReplicaGone || last == "" {
		last = fmt.Sprintf("CRD %s, %d of %d instances ready", c.CRD, c.ReadyInstances, c.Instances)
	}
	c.HandingOver, c.Reason = true, ""
	c.Why = fmt.Sprintf("hub replica %s is taking the cluster over and has not observed it yet; as replica %s last saw it: %s", replica, was.replica, last)
	return c
}

// decodeRecord returns a record's clusters; a record that does not decode
// is not ours to judge and counts for nothing.
func decodeRecord(cm *corev1.ConfigMap) []hub.ClusterStatus {
	var theirs []hub.ClusterStatus
	if json.Unmarshal([]byte(cm.Data[recordKey]), &theirs) != nil {
		return nil
	}
	return theirs
}

func isExpired(m metav1.Object, ttl time.Duration, now time.Time) bool {
	return now.After(renewed(m).Add(ttl))
}

func renewed(m metav1.Object) time.Time {
	t, err := time.Parse(time.RFC3339Nano, m.GetAnnotations()[AnnotationRenewed])
	if err != nil {
		return time.Time{}
	}
	return t
}

// publish writes this replica's record of the graph when it changed or is
// due for renewal.
func (r *Status) publish(ctx context.Context, own hub.GraphStatus) error {
	raw, err := json.Marshal(own.Clusters)
	if err != nil {
		return fmt.Errorf("encoding the fleet status of graph %s: %w", own.Graph, err)
	}
	now := time.Now()
	r.mu.Lock()
	last, ok := r.published[own.Graph]
	r.mu.Unlock()
	if ok && last.data == string(raw) && now.Sub(last.renewed) < r.TTL/3 {
		return nil
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   r.Namespace,
			Name:        r.recordName(own.Graph),
			Labels:      map[string]string{LabelFleetStatusOf: contract.LabelValue(own.Graph), LabelReplica: contract.LabelValue(r.Replica), contract.LabelManagedBy: contract.ManagedBy},
			Annotations: map[string]string{AnnotationRenewed: now.UTC().Format(time.RFC3339Nano), AnnotationPeer: shard.PeerID(r.Replica)},
		},
		Data: map[string]string{recordKey: string(raw)},
	}
	if err := r.write(ctx, own.Graph, cm); err != nil {
		return fmt.Errorf("writing replica %s's fleet status of graph %s: %w", r.Replica, own.Graph, err)
	}
	r.mu.Lock()
	if r.published == nil {
		r.published = map[string]record{}
	}
	r.published[own.Graph] = record{data: string(raw), renewed: now}
	r.mu.Unlock()
	return nil
}

// write creates the record, or replaces it if this replica wrote it. The
// replacement is fenced on the version read: an object of that name that
// someone else put there meanwhile is not overwritten.
func (r *Status) write(ctx context.Context, graph string, cm *corev1.ConfigMap) error {
	cur, err := r.ownRecord(ctx, graph)
	if err != nil {
		return err
	}
	if cur == nil {
		return r.Client.Create(ctx, cm)
	}
	cm.ResourceVersion = cur.ResourceVersion
	return r.Client.Update(ctx, cm)
}

// recordName is the record's ConfigMap name: graph and replica.
func (r *Status) recordName(graph string) string {
	return "fleetgraph-" + graph + "-" + strings.ToLower(r.Replica)
}
