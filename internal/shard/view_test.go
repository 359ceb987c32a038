package shard

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
)

// TestAViewGivesEachClusterToOnePeer: under one view every cluster has
// exactly one owner among its peers, and never a peer outside it; the
// order the peers were listed in does not matter.
func TestAViewGivesEachClusterToOnePeer(t *testing.T) {
	v := newView(sharder.PeerInfo{ID: "c"}, sharder.PeerInfo{ID: "a", Weight: 2}, sharder.PeerInfo{ID: "b"})
	w := newView(sharder.PeerInfo{ID: "b"}, sharder.PeerInfo{ID: "a", Weight: 2}, sharder.PeerInfo{ID: "c"})
	require.True(t, v.equal(w))
	per := map[string]int{}
	for i := range 3000 {
		cluster := fmt.Sprintf("cluster-%d", i)
		owners := 0
		for _, p := range v {
			if v.gives(cluster, p.ID) {
				owners++
				per[p.ID]++
			}
		}
		assert.Equal(t, 1, owners, cluster)
		assert.False(t, v.gives(cluster, "d"), "a peer outside the view is given nothing")
	}
	for _, id := range []string{"a", "b", "c"} {
		assert.Greater(t, per[id], 300, "every peer gets a share: %v", per)
	}
	assert.False(t, view(nil).gives("cluster-1", "a"), "an empty view gives nothing")
}

// TestAViewIsReadBackAsWritten, and anything else is no view.
func TestAViewIsReadBackAsWritten(t *testing.T) {
	v := newView(sharder.PeerInfo{ID: "r-1", Weight: 3}, sharder.PeerInfo{ID: "r-0"})
	assert.Equal(t, "r-0=1,r-1=3", v.String())
	got, ok := parseView(v.String())
	require.True(t, ok)
	assert.True(t, got.equal(v))
	for _, bad := range []string{"", "r-0", "r-0=x", "=1", "r-0=1,"} {
		_, ok := parseView(bad)
		assert.False(t, ok, bad)
	}
}

// TestAPeerWithoutAViewClaimsEverything: nothing is known of what it
// serves, so nothing may be started that it might serve.
func TestAPeerWithoutAViewClaimsEverything(t *testing.T) {
	v := newView(sharder.PeerInfo{ID: "a"}, sharder.PeerInfo{ID: "b"})
	withView := peer{info: sharder.PeerInfo{ID: "b"}, view: v}
	blind := peer{info: sharder.PeerInfo{ID: "b"}}
	for i := range 50 {
		cluster := fmt.Sprintf("cluster-%d", i)
		assert.Equal(t, v.gives(cluster, "b"), withView.claims(cluster))
		assert.True(t, blind.claims(cluster))
	}
}

// TestSharesFollowWeights: over a StatefulSet's names (which differ in
// their last character alone), each replica's share of 10,000 clusters is
// within 10% of its weight's share.
func TestSharesFollowWeights(t *testing.T) {
	for _, peers := range [][]sharder.PeerInfo{
		{{ID: "replica-0"}, {ID: "replica-1"}, {ID: "replica-2"}},
		{{ID: "replica-0"}, {ID: "replica-1"}, {ID: "replica-2"}, {ID: "replica-3"}},
		{{ID: "hub-0", Weight: 1}, {ID: "hub-1", Weight: 3}},
	} {
		v := newView(peers...)
		total := uint32(0)
		for _, p := range v {
			total += p.Weight
		}
		per := map[string]int{}
		const n = 10000
		for i := range n {
			for _, p := range v {
				if v.gives(fmt.Sprintf("cluster-%d", i), p.ID) {
					per[p.ID]++
				}
			}
		}
		for _, p := range v {
			want := float64(n) * float64(p.Weight) / float64(total)
			assert.InEpsilon(t, want, float64(per[p.ID]), 0.1, "%s of %v: %v", p.ID, v, per)
		}
	}
}

// TestACoordinatorThatCouldNeverServeRefusesToStart: a renew interval
// not under the Lease (in the whole seconds the Lease holds) is an error
// when the manager starts it, not a replica that silently serves nothing.
func TestACoordinatorThatCouldNeverServeRefusesToStart(t *testing.T) {
	for _, o := range []Options{
		{LeaseDuration: 3 * time.Second, RenewInterval: 3 * time.Second},
		{LeaseDuration: 2500 * time.Millisecond, RenewInterval: 2 * time.Second},
	} {
		c := NewCoordinator(fake.NewClientBuilder().Build(), o)
		err := c.Runnable().Start(context.Background())
		assert.ErrorIs(t, err, ErrLeaseTimings, "%v", o)
	}
}

// TestAStoppedCoordinatorStartsNothing: once its decision loop has
// stopped (and expired its Lease), a cluster engaged late is not served.
func TestAStoppedCoordinatorStartsNothing(t *testing.T) {
	c := NewCoordinator(fake.NewClientBuilder().Build(), Options{LeaseDuration: 3 * time.Second, RenewInterval: time.Second, Probe: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Runnable().Start(ctx) }()
	engaged := context.Background()
	require.NoError(t, c.Engage(engaged, "first", nil))
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.serving() == 1
	}, 5*time.Second, 10*time.Millisecond, "a lone replica serves its cluster")
	cancel()
	require.NoError(t, <-done)

	require.NoError(t, c.Engage(engaged, "late", nil))
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Equal(t, 0, c.serving(), "nothing is served after the replica left")
}
