package spoke

import (
	"context"
	"fmt"
	"time"

	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

// A hung cluster must delay only itself. Two things see to it here: every
// call a reconcile makes to a cluster is bounded by Options.CallTimeout
// (callCtx), and a graph's workers are shared fairly among its clusters
// (shareLocked): a cluster that has its share of reconciles in flight has
// further requests parked until one of its own ends, so that the workers
// left serve the other clusters.

// callCtx bounds one call to the member's cluster by Options.CallTimeout.
func (m *member) callCtx() (context.Context, context.CancelFunc) {
	return withCallTimeout(m.ctx, m.c.opts.CallTimeout)
}

// withCallTimeout is ctx bounded by d; a d of zero or less adds no bound.
func withCallTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// shareLocked is how many reconciles one cluster may have in flight: the
// workers divided among the live members, rounded up, at least one.
func (c *controller) shareLocked() int {
	live := 0
	for _, m := range c.members {
		if m.ctx.Err() == nil {
			live++
		}
	}
	if live <= 1 {
		return c.opts.Workers
	}
	return max(1, (c.opts.Workers+live-1)/live)
}

// parkLocked sets req aside if its member has its share in flight already;
// it reports whether it did.
func (c *controller) parkLocked(m *member, req mcreconcile.Request) bool {
	if c.busy[m] < c.shareLocked() {
		return false
	}
	p := c.parked[m]
	if p == nil {
		p = map[mcreconcile.Request]struct{}{}
		c.parked[m] = p
	}
	p[req] = struct{}{}
	return true
}

// unparkLocked takes out the requests of m that fit in its share now; the
// caller adds them to the queue once it has released mu.
func (c *controller) unparkLocked(m *member) []mcreconcile.Request {
	p := c.parked[m]
	free := c.shareLocked() - c.busy[m]
	var out []mcreconcile.Request
	for req := range p {
		if len(out) >= free {
			break
		}
		out = append(out, req)
		delete(p, req)
	}
	if len(p) == 0 {
		delete(c.parked, m)
	}
	return out
}

// waitReady waits, at most Options.CallTimeout, until the member's
// instance watch runs. It returns nil when the member ended.
func (m *member) waitReady() error {
	ctx, cancel := m.callCtx()
	defer cancel()
	select {
	case <-m.ready:
		return nil
	case <-ctx.Done():
		if m.ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: instance watch: %w", errWatchStarting, ctx.Err())
	}
}
