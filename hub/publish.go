package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Backoff between two attempts to publish a graph.
const (
	publishRetry    = time.Second
	publishRetryMax = time.Minute
)

// publications are the background publications of graphs, one per name.
type publications struct {
	mu      sync.Mutex
	running map[string]context.CancelFunc
	wg      sync.WaitGroup
}

// Publish puts g in the Publisher in the background, retried with backoff
// (1s doubling up to a minute), so that clusters can bind it before any of
// them is engaged. It ends when g is published or refused (a breaking
// change, or an object it does not own: each cluster's attempts report
// it), a later Publish of the same name replaces it, Stop is called for
// it, or the FanOut stops. Serve calls it; call it yourself when you
// drive the clusters with Ensure. Without a Publisher it does nothing.
func (f *FanOut) Publish(g Graph) {
	if f.opts.Publisher == nil {
		return
	}
	ctx, cancel := context.WithCancel(f.ctx)
	p := &f.publisher
	p.mu.Lock()
	if p.running == nil {
		p.running = map[string]context.CancelFunc{}
	}
	if old := p.running[g.Name]; old != nil {
		old()
	}
	p.running[g.Name] = cancel
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		defer cancel()
		f.publish(ctx, g)
	}()
}

func (f *FanOut) publish(ctx context.Context, g Graph) {
	log := f.opts.Logger.WithValues("graph", g.Name)
	for delay := publishRetry; ctx.Err() == nil; delay = min(2*delay, publishRetryMax) {
		err := f.opts.Publisher.Publish(ctx, g)
		if err == nil {
			log.Info("graph published")
			return
		}
		log.Info("graph not published", "reason", err.Error())
		if errors.Is(err, ErrIncompatible) || errors.Is(err, ErrConflict) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
}

// stop ends the named graph's publication, if it runs.
func (p *publications) stop(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cancel := p.running[name]; cancel != nil {
		cancel()
		delete(p.running, name)
	}
}

// wait returns once every publication has ended.
func (p *publications) wait() { p.wg.Wait() }

// ensurePublished is an attempt with a Publisher: g is published, the
// Publisher says whether the cluster serves it, and the cluster's
// discovery must list g's kind (else ErrNotServedYet) and g.Kinds. Nothing
// is applied to the cluster.
func (f *FanOut) ensurePublished(ctx context.Context, c Cluster, g Graph) error {
	if err := f.opts.Publisher.Publish(ctx, g); err != nil {
		return err
	}
	reqCtx, cancel := f.request(ctx)
	err := f.opts.Publisher.Serves(reqCtx, c.Cluster, g)
	cancel()
	if err != nil {
		return err
	}
	gvk := g.kind()
	reqCtx, cancel = f.request(ctx)
	served, err := servedKinds(reqCtx, c.Cluster, gvk.GroupVersion())
	cancel()
	if err != nil {
		return err
	}
	if !served[gvk.Kind] {
		return fmt.Errorf("%w: kind %s", ErrNotServedYet, gvk)
	}
	return f.servesKinds(ctx, c.Cluster, g.Kinds)
}
