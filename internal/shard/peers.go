package shard

import (
	"context"
	"fmt"
	"strconv"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"
)

// The labels and weight annotation are multicluster-runtime's peer
// registry's, so that tools which list its peers (and LivePeers) see ours.
// annotView is ours: the view the replica decides by, which is its claim.
const (
	labelPartOf = "app.kubernetes.io/part-of"
	labelPeer   = "mcr.sigs.k8s.io/peer"
	labelPrefix = "mcr.sigs.k8s.io/prefix"
	annotWeight = "mcr.sigs.k8s.io/weight"
	annotView   = "fleetgraph.dev/shard-view"
	partOf      = "multicluster-runtime"
)

// peer is another replica as its Lease says: who it is and the view it
// decides by (none for a Lease without one, written by a replica that is
// not this coordinator).
type peer struct {
	info sharder.PeerInfo
	view view
	// until is when its Lease expires unless renewed.
	until time.Time
}

// claims reports whether p may serve cluster: under its view, or, when it
// published none, always (nothing is known of what it serves).
func (p peer) claims(cluster string) bool {
	return p.view == nil || p.view.gives(cluster, p.info.ID)
}

// leases reads and writes the peer Leases, <prefix>-<id> in ns, on the
// hub cluster: the only requests the coordinator makes.
type leases struct {
	c      client.Client
	ns     string
	prefix string
	self   sharder.PeerInfo
	ttl    time.Duration
	// last is the Lease as last written (its resourceVersion included),
	// so that a renewal is one request. Used by the decision loop only.
	last *coordv1.Lease
}

func (l *leases) name() string { return fmt.Sprintf("%s-%s", l.prefix, l.self.ID) }

// publish writes this replica's Lease as renewed at renewed, deciding by
// v: one update of the Lease as last written, and a read first only when
// there is none or it is stale.
func (l *leases) publish(ctx context.Context, v view, renewed time.Time) error {
	if last := l.last; last != nil {
		lease := last.DeepCopy()
		l.fill(lease, v, renewed)
		err := l.c.Update(ctx, lease)
		if err == nil {
			l.last = lease
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("writing this replica's Lease: %w", err)
		}
		l.last = nil
	}
	lease := &coordv1.Lease{}
	err := l.c.Get(ctx, client.ObjectKey{Namespace: l.ns, Name: l.name()}, lease)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading this replica's Lease: %w", err)
	}
	create := apierrors.IsNotFound(err)
	if create {
		lease = &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: l.name()}}
	}
	l.fill(lease, v, renewed)
	if create {
		err = l.c.Create(ctx, lease)
	} else {
		err = l.c.Update(ctx, lease)
	}
	if err != nil {
		return fmt.Errorf("writing this replica's Lease: %w", err)
	}
	l.last = lease
	return nil
}

func (l *leases) fill(lease *coordv1.Lease, v view, renewed time.Time) {
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[labelPartOf], lease.Labels[labelPeer], lease.Labels[labelPrefix] = partOf, "true", l.prefix
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[annotWeight] = strconv.FormatUint(uint64(l.self.Weight), 10)
	lease.Annotations[annotView] = v.String()
	lease.Spec.HolderIdentity = ptr.To(l.self.ID)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(l.written() / time.Second))
}

// written is the Lease's duration as the Lease holds it, in whole
// seconds: what the peers expire it by.
func (l *leases) written() time.Duration { return max(l.ttl.Truncate(time.Second), time.Second) }

// expire writes this replica's Lease as expired and claiming nothing, so
// that the others take its clusters over at their next round.
func (l *leases) expire(ctx context.Context) error {
	return l.publish(ctx, nil, time.Now().Add(-l.ttl-time.Second))
}

// others lists the peer Leases and returns the other replicas that are
// live at now. The list is read from the API server, never a cache: a
// replica starts a cluster only on what it read after its own last write.
func (l *leases) others(ctx context.Context, now time.Time) ([]peer, error) {
	list := &coordv1.LeaseList{}
	err := l.c.List(ctx, list, client.InNamespace(l.ns), client.MatchingLabels{labelPeer: "true", labelPrefix: l.prefix})
	if err != nil {
		return nil, fmt.Errorf("listing the peer Leases: %w", err)
	}
	out := []peer{}
	for i := range list.Items {
		info, ok := livePeer(&list.Items[i], now)
		if !ok || info.ID == l.self.ID {
			continue
		}
		v, _ := parseView(list.Items[i].Annotations[annotView])
		spec := list.Items[i].Spec
		until := spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second)
		out = append(out, peer{info: info, view: v, until: until})
	}
	return out, nil
}

func livePeer(l *coordv1.Lease, now time.Time) (sharder.PeerInfo, bool) {
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return sharder.PeerInfo{}, false
	}
	if now.After(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)) {
		return sharder.PeerInfo{}, false
	}
	w, err := strconv.ParseUint(l.Annotations[annotWeight], 10, 32)
	if err != nil || w == 0 {
		w = 1
	}
	return sharder.PeerInfo{ID: *s.HolderIdentity, Weight: uint32(w)}, true
}

// LivePeers returns the IDs of the peers whose Leases in namespace ns (of
// any prefix) are live now, and whether any peer Lease was found at all:
// without one, no replica runs this registry there and nothing can be
// said about who is alive.
func LivePeers(ctx context.Context, c client.Client, ns string) (map[string]bool, bool, error) {
	list := &coordv1.LeaseList{}
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{labelPeer: "true"}); err != nil {
		return nil, false, fmt.Errorf("listing the peer Leases in %s: %w", ns, err)
	}
	now := time.Now()
	live := map[string]bool{}
	for i := range list.Items {
		if p, ok := livePeer(&list.Items[i], now); ok {
			live[p.ID] = true
		}
	}
	return live, len(list.Items) > 0, nil
}

// PeerID is the ID a replica named id has among its peers (its Lease's
// holder).
func PeerID(id string) string { return sanitize.DNS1123(id) }

// ClaimedBy returns the IDs of the live replicas (Options.Prefix prefix,
// in namespace ns) whose Lease claims cluster: one while the fleet is
// settled, two never while both serve it.
func ClaimedBy(ctx context.Context, c client.Client, ns, prefix, cluster string) ([]string, error) {
	l := &leases{c: c, ns: ns, prefix: prefix + "-peer"}
	live, err := l.others(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range live {
		if p.claims(cluster) {
			ids = append(ids, p.info.ID)
		}
	}
	return ids, nil
}
