package shard

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/peers"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"
)

var _ peers.Registry = &PeerRegistry{}

// The labels and annotation multicluster-runtime's registry puts on peer
// Leases; ours are the same so that both kinds of replica see each other.
const (
	labelPartOf = "app.kubernetes.io/part-of"
	labelPeer   = "mcr.sigs.k8s.io/peer"
	labelPrefix = "mcr.sigs.k8s.io/prefix"
	annotWeight = "mcr.sigs.k8s.io/weight"
	partOf      = "multicluster-runtime"
)

// PeerRegistry is a Lease-based peers.Registry with configurable timings.
type PeerRegistry struct {
	c      client.Client
	ns     string
	prefix string
	self   sharder.PeerInfo
	ttl    time.Duration
	renew  time.Duration
	log    logr.Logger

	mu    sync.RWMutex
	peers []sharder.PeerInfo
}

// NewPeerRegistry returns the registry of peer id (sanitised to a DNS
// name) with Leases <prefix>-<id> in namespace ns, each valid for ttl and
// renewed every renew.
func NewPeerRegistry(c client.Client, ns, prefix, id string, weight uint32, ttl, renew time.Duration, log logr.Logger) *PeerRegistry {
	return &PeerRegistry{
		c: c, ns: ns, prefix: prefix,
		self: sharder.PeerInfo{ID: PeerID(id), Weight: max(weight, 1)},
		ttl:  ttl, renew: renew, log: log,
	}
}

// learnPeers lists the live peers once, waiting at most timeout, before
// the coordinator decides anything. Until then Snapshot holds this replica
// alone, so a replica joining a running fleet would take every free fence
// at its first engagements and give most back at its first refresh; and
// multicluster-runtime v0.24.1's coordinator releases a fence in a
// goroutine of its own, unsynchronised with a later TryAcquire on the same
// fence (a data race under -race), which that take-and-give-back invites.
// A failed list is logged; Run retries it.
func (r *PeerRegistry) learnPeers(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := r.refresh(ctx); err != nil {
		r.log.V(1).Info("listing peer Leases before the first decision failed; deciding alone until the next refresh", "reason", err.Error())
	}
}

// Self implements peers.Registry.
func (r *PeerRegistry) Self() sharder.PeerInfo { return r.self }

// Snapshot implements peers.Registry: the live peers, this one included.
func (r *PeerRegistry) Snapshot() []sharder.PeerInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.peers == nil {
		return []sharder.PeerInfo{r.self}
	}
	return r.peers
}

// Run implements peers.Registry: it renews this peer's Lease and refreshes
// the peers every renew until ctx ends, then expires the Lease so that the
// other peers take this one's clusters over at their next refresh.
func (r *PeerRegistry) Run(ctx context.Context) error {
	t := time.NewTicker(r.renew)
	defer t.Stop()
	for {
		if err := r.renewSelf(ctx, time.Now()); err != nil && ctx.Err() == nil {
			r.log.V(1).Info("renewing the peer Lease failed; retrying", "reason", err.Error())
		}
		if err := r.refresh(ctx); err != nil && ctx.Err() == nil {
			r.log.V(1).Info("listing peer Leases failed; retrying", "reason", err.Error())
		}
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.renew)
			defer cancel()
			_ = r.renewSelf(stop, time.Now().Add(-r.ttl-time.Second)) // best effort: expired at once
			return nil
		case <-t.C:
		}
	}
}

func (r *PeerRegistry) leaseName() string { return fmt.Sprintf("%s-%s", r.prefix, r.self.ID) }

// renewSelf writes this peer's Lease as renewed at renewed.
func (r *PeerRegistry) renewSelf(ctx context.Context, renewed time.Time) error {
	lease := &coordv1.Lease{}
	err := r.c.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: r.leaseName()}, lease)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	create := apierrors.IsNotFound(err)
	if create {
		lease = &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: r.leaseName()}}
	}
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[labelPartOf], lease.Labels[labelPeer], lease.Labels[labelPrefix] = partOf, "true", r.prefix
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[annotWeight] = strconv.FormatUint(uint64(r.self.Weight), 10)
	lease.Spec.HolderIdentity = ptr.To(r.self.ID)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(max(r.ttl/time.Second, 1)))
	if create {
		return r.c.Create(ctx, lease)
	}
	return r.c.Update(ctx, lease)
}

// refresh lists the peer Leases and keeps those not expired.
func (r *PeerRegistry) refresh(ctx context.Context) error {
	list := &coordv1.LeaseList{}
	err := r.c.List(ctx, list, client.InNamespace(r.ns), client.MatchingLabels{labelPeer: "true", labelPrefix: r.prefix})
	if err != nil {
		return err
	}
	now := time.Now()
	live := []sharder.PeerInfo{r.self}
	for i := range list.Items {
		if p, ok := livePeer(&list.Items[i], now); ok && p.ID != r.self.ID {
			live = append(live, p)
		}
	}
	r.mu.Lock()
	r.peers = live
	r.mu.Unlock()
	return nil
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
