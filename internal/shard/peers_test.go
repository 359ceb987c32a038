package shard

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
)

func peerLease(holder string, renewed time.Time, seconds int32, weight string) *coordv1.Lease {
	return &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{annotWeight: weight}},
		Spec: coordv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			RenewTime:            &metav1.MicroTime{Time: renewed},
			LeaseDurationSeconds: ptr.To(seconds),
		},
	}
}

// TestLivePeer: a peer counts until its Lease expires; a Lease without
// holder or times never counts; a bad weight is 1.
func TestLivePeer(t *testing.T) {
	now := time.Now()
	cases := map[string]struct {
		lease *coordv1.Lease
		want  sharder.PeerInfo
		live  bool
	}{
		"fresh":      {peerLease("r1", now.Add(-time.Second), 6, "3"), sharder.PeerInfo{ID: "r1", Weight: 3}, true},
		"expired":    {peerLease("r1", now.Add(-7*time.Second), 6, "1"), sharder.PeerInfo{}, false},
		"no holder":  {peerLease("", now, 6, "1"), sharder.PeerInfo{}, false},
		"bad weight": {peerLease("r2", now, 6, "x"), sharder.PeerInfo{ID: "r2", Weight: 1}, true},
		"no times":   {&coordv1.Lease{Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To("r3")}}, sharder.PeerInfo{}, false},
	}
	for name, tc := range cases {
		got, live := livePeer(tc.lease, now)
		assert.Equal(t, tc.live, live, name)
		assert.Equal(t, tc.want, got, name)
	}
}

// TestTakeoverBound: the defaults give MCR's fence timings and a bound of
// lease + renew + probe.
func TestTakeoverBound(t *testing.T) {
	assert.Equal(t, 20*time.Second+20*time.Second/3+5*time.Second, Options{}.TakeoverBound())
	assert.Equal(t, 9*time.Second, Options{LeaseDuration: 6 * time.Second, RenewInterval: 2 * time.Second, Probe: time.Second}.TakeoverBound())
}

// TestAJoiningReplicaKnowsItsPeersBeforeItsFirstDecision: the coordinator's
// first Snapshot already holds the live peers, not this replica alone (which
// would make it take every free fence and give them back).
func TestAJoiningReplicaKnowsItsPeersBeforeItsFirstDecision(t *testing.T) {
	other := peerLease("replica-0", time.Now(), 6, "1")
	other.Name, other.Namespace = "mcr-peer-replica-0", "kube-system"
	other.Labels = map[string]string{labelPeer: "true", labelPrefix: "mcr-peer"}
	c := fake.NewClientBuilder().WithObjects(other).Build()
	reg := NewPeerRegistry(c, "kube-system", "mcr-peer", "replica-1", 1, 6*time.Second, 2*time.Second, logr.Discard())
	assert.Equal(t, []sharder.PeerInfo{{ID: "replica-1", Weight: 1}}, reg.Snapshot(), "before: alone")

	reg.learnPeers(time.Second)

	assert.ElementsMatch(t, []sharder.PeerInfo{{ID: "replica-1", Weight: 1}, {ID: "replica-0", Weight: 1}}, reg.Snapshot())
}
