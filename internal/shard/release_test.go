package shard_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/shard"
)

// releasing is a cluster that counts its releases and acquires.
type releasing struct {
	cluster.Cluster
	released, acquired atomic.Int32
}

func (r *releasing) Release() { r.released.Add(1) }
func (r *releasing) Acquire() { r.acquired.Add(1) }

// A replica acquires each cluster it starts serving and releases each it
// stops serving, once: one that leaves the provider, and all of them when
// the replica stops. It releases none that it serves.
func TestAReplicaReleasesTheClustersItStopsServing(t *testing.T) {
	o := testOptions()
	o.ID = "replica-0"
	coord := shard.NewCoordinator(fakeHub(), o)
	l := newLedger()
	coord.AddAware(recorder{id: o.ID, l: l})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = coord.Runnable().Start(ctx) }()
	leaving, leave := context.WithCancel(ctx)
	cls := make([]*releasing, 5)
	for i := range cls {
		cls[i] = &releasing{}
		parent := ctx
		if i == 0 {
			parent = leaving
		}
		require.NoError(t, coord.Engage(parent, multicluster.ClusterName(fmt.Sprintf("cluster-%d", i)), cls[i]))
	}
	every(t, l, len(cls), 10*time.Second, o.ID)
	for i, c := range cls {
		assert.Zero(t, c.released.Load(), "cluster-%d is served, not released", i)
		assert.EqualValues(t, 1, c.acquired.Load(), "cluster-%d acquired as its serving starts", i)
	}

	leave()
	require.Eventually(t, func() bool { return cls[0].released.Load() == 1 }, 10*time.Second, 10*time.Millisecond, "a cluster that leaves is released")
	cancel()
	<-done
	for i, c := range cls {
		assert.EqualValues(t, 1, c.released.Load(), "cluster-%d released once", i)
	}
}
