package shard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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

// TestTakeoverBound: the Lease, then at most one round to notice and one
// for the round's own requests; a round is the shorter of Probe and
// RenewInterval.
func TestTakeoverBound(t *testing.T) {
	assert.Equal(t, 30*time.Second, Options{}.TakeoverBound())
	assert.Equal(t, 8*time.Second, Options{LeaseDuration: 6 * time.Second, RenewInterval: 2 * time.Second, Probe: time.Second}.TakeoverBound())
	assert.Equal(t, 10*time.Second, Options{LeaseDuration: 6 * time.Second, RenewInterval: 2 * time.Second, Probe: 5 * time.Second}.TakeoverBound())
}
