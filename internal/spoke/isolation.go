package spoke

import (
	"context"
	"fmt"

	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// A hung cluster must delay only itself. Two things see to it here: every
// call a reconcile makes to a cluster is bounded by Options.CallTimeout
// (callCtx), and a graph's workers are shared fairly among its clusters
// (shareLocked): a cluster that has its share of reconciles in flight has
// further requests parked until one of its own ends, so that the workers
// left serve the other clusters. Within a cluster, the share is divided
// among namespaces in the same way (package fair).

// callCtx bounds one call to the member's cluster by Options.CallTimeout.
func (m *member) callCtx() (context.Context, context.CancelFunc) {
	return instance.CallContext(m.ctx, m.c.opts.CallTimeout)
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
		return fmt.Errorf("%w: instance watch: %w", instance.ErrWatchStarting, ctx.Err())
	}
}
