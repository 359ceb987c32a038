package shard

import (
	"context"
	"slices"
	"time"

	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// decide is one round: take the peers the last round listed (or list
// them), stop serving what the view they make does not give this replica,
// publish that view (which renews the Lease), list the peers again, and
// start what the view gives this replica and no other live peer claims. It reports whether the second list saw a
// different view, which the next round publishes.
//
// Why no cluster is served twice: a replica starts a cluster only after
// writing a view that gives it the cluster and then reading every other
// live Lease without a claim on it. Of two replicas that both write and
// then read, at least one reads the other's write (the API server is
// linearizable), so they cannot both start it; a replica stops what its
// new view takes away before writing that view; and one that cannot renew
// stops everything before its Lease can expire in the others' eyes.
func (c *Coordinator) decide(ctx context.Context) bool {
	before, err := c.before(ctx)
	if err != nil {
		c.failed(err)
		return false
	}
	want := viewWith(c.self, before)
	c.mu.Lock()
	c.pending = want
	stopped := c.stopUngiven(want)
	c.mu.Unlock()
	renewed := time.Now()
	// The write may take as long as the Lease stays valid: one that
	// succeeds late still renews, where a shorter deadline would give up
	// on a slow API server and let the fence stop everything.
	wctx, wcancel := context.WithTimeout(ctx, c.leases.written()-c.o.RenewInterval)
	err = c.leases.publish(wctx, want, renewed)
	wcancel()
	if err != nil {
		c.failed(err)
		return false
	}
	c.renewed(want, renewed)
	lctx, lcancel := context.WithTimeout(ctx, c.o.RenewInterval)
	after, err := c.leases.others(lctx, time.Now())
	lcancel()
	if err != nil {
		c.failed(err)
		return false
	}
	c.mu.Lock()
	c.peers, c.listed = after, true
	c.seen = after
	starts := c.startGiven()
	serving := c.serving()
	c.mu.Unlock()
	for m, sctx := range starts {
		go c.serve(sctx, m)
	}
	if len(starts) > 0 || stopped > 0 {
		c.o.Logger.Info("sharding decided", "view", want.String(), "serving", serving, "started", len(starts), "stopped", stopped)
	}
	return !viewWith(c.self, after).equal(want)
}

// before is the peers the next view is made of: those the last round
// listed after its write and whose Leases have not expired since, or a
// fresh list when it did not get that far.
// One list per round is enough; the list after the write is the one that
// decides what starts.
func (c *Coordinator) before(ctx context.Context) ([]peer, error) {
	c.mu.Lock()
	seen := c.seen
	c.seen = nil
	c.mu.Unlock()
	if seen != nil {
		now := time.Now()
		return slices.DeleteFunc(seen, func(p peer) bool { return !now.Before(p.until) }), nil
	}
	lctx, cancel := context.WithTimeout(ctx, c.o.RenewInterval)
	defer cancel()
	return c.leases.others(lctx, time.Now())
}

func viewWith(self sharder.PeerInfo, others []peer) view {
	infos := []sharder.PeerInfo{self}
	for _, p := range others {
		infos = append(infos, p.info)
	}
	return newView(infos...)
}

// renewed records a successful write of v at renewed: this replica may
// serve until LeaseDuration-RenewInterval later (the duration as written,
// in whole seconds), and starts nothing until it has listed the peers
// again.
func (c *Coordinator) renewed(v view, renewed time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.published, c.listed = v, false
	c.writes++
	c.validUntil = renewed.Add(c.leases.written() - c.o.RenewInterval)
	if c.fence != nil {
		c.fence.Reset(time.Until(c.validUntil))
	}
}

// failed logs a round's failed request; the next round retries, and the
// fence stops everything if none succeeds in time.
func (c *Coordinator) failed(err error) {
	c.o.Logger.V(1).Info("sharding round failed; retrying", "reason", err.Error())
}

// fenceIfExpired stops serving every cluster once this replica's Lease may
// have expired in its peers' eyes.
func (c *Coordinator) fenceIfExpired() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.published == nil || time.Now().Before(c.validUntil) {
		return
	}
	c.o.Logger.Info("could not renew this replica's Lease in time; it stops serving every cluster until it can", "serving", c.serving())
	c.stopAll()
	c.published, c.pending, c.listed = nil, nil, false
}

// start begins serving m if this replica's last decision allows it, and
// returns the serving context (nil if it does not). Called with mu held.
func (c *Coordinator) start(m *member) context.Context {
	if m.cancel != nil || m.parent.Err() != nil || !c.mayServe(string(m.name)) {
		return nil
	}
	m.ctx, m.cancel = context.WithCancel(m.parent)
	if a, ok := m.cl.(acquirer); ok {
		a.Acquire()
	}
	return m.ctx
}

// mayServe reports whether this replica may start serving cluster now:
// its Lease is valid and has been for a round, the view it wrote (and the
// one it is about to write) give it the cluster, and no other live peer
// claims it.
func (c *Coordinator) mayServe(cluster string) bool {
	if c.published == nil || !c.listed || c.writes < 2 || !time.Now().Before(c.validUntil) {
		return false
	}
	if !c.published.gives(cluster, c.self.ID) || (c.pending != nil && !c.pending.gives(cluster, c.self.ID)) {
		return false
	}
	for _, p := range c.peers {
		if p.claims(cluster) {
			return false
		}
	}
	return true
}

// startGiven starts every member this replica may serve and does not.
// Called with mu held.
func (c *Coordinator) startGiven() map[*member]context.Context {
	starts := map[*member]context.Context{}
	for _, m := range c.members {
		if ctx := c.start(m); ctx != nil {
			starts[m] = ctx
		}
	}
	return starts
}

// stopUngiven stops serving what v does not give this replica, and
// returns how many. Called with mu held.
func (c *Coordinator) stopUngiven(v view) int {
	n := 0
	for _, m := range c.members {
		if m.cancel != nil && !v.gives(string(m.name), c.self.ID) {
			m.stop()
			n++
		}
	}
	return n
}

// stopAll stops serving every cluster. Called with mu held.
func (c *Coordinator) stopAll() {
	for _, m := range c.members {
		m.stop()
	}
}

// serving counts the clusters served. Called with mu held.
func (c *Coordinator) serving() int {
	n := 0
	for _, m := range c.members {
		if m.cancel != nil {
			n++
		}
	}
	return n
}

// serve engages every aware with the cluster under ctx. A failure stops
// the serving; the next round starts it again.
func (c *Coordinator) serve(ctx context.Context, m *member) {
	c.mu.Lock()
	awares := append([]multicluster.Aware(nil), c.awares...)
	c.mu.Unlock()
	for _, a := range awares {
		if err := a.Engage(ctx, m.name, m.cl); err != nil {
			c.o.Logger.Error(err, "engaging a cluster failed; retrying at the next round", "cluster", m.name)
			c.mu.Lock()
			if c.members[m.name] == m && m.ctx == ctx {
				m.stop()
			}
			c.mu.Unlock()
			return
		}
	}
}
