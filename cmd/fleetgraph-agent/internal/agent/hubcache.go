package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// The agent reads its assignments through a cache of its namespace on
// the hub. After the hub was out of reach for a while its informer
// retries with a backoff that grows to half a minute and more; so when a
// write to the hub succeeds again after failing for longer than
// refreshAfter, the agent reads its assignments again into a new cache
// and drops the old one, and a rollout that moved meanwhile reaches it
// at once.

// refreshAfter is how long the hub must have failed the agent's writes
// before the agent reads its assignments again.
const refreshAfter = 10 * time.Second

// hubCache is one cache of the agent's assignments.
type hubCache struct {
	cache.Cache
	informer cache.Informer
	stop     context.CancelFunc
}

// hubContact tracks whether the hub takes the agent's writes.
type hubContact struct {
	mu         sync.Mutex
	lostSince  time.Time
	refreshing bool
}

// newHubCache starts a cache of the agent's assignments that lives as
// long as ctx, without waiting for it to read them.
func (a *Agent) newHubCache(ctx context.Context) (*hubCache, error) {
	ca, err := cache.New(a.token.config(), cache.Options{ // a watch outlives any request timeout
		Scheme:            a.hubScheme,
		Mapper:            hubMapper(),
		DefaultNamespaces: map[string]cache.Config{a.opts.namespace(): {}},
	})
	if err != nil {
		return nil, fmt.Errorf("agent: a cache of the hub: %w", err)
	}
	cctx, stop := context.WithCancel(ctx)
	inf, err := ca.GetInformer(cctx, &fgv1alpha1.GraphAssignment{}, cache.BlockUntilSynced(false))
	if err == nil {
		poke := func(any) { a.poke() }
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
		})
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("agent: watching the assignments: %w", err)
	}
	go func() { _ = ca.Start(cctx) }()
	return &hubCache{Cache: ca, informer: inf, stop: stop}, nil
}

// hubAnswered records whether a write to the hub succeeded; once writes
// succeed again after failing for longer than refreshAfter, the
// assignments are read again.
func (a *Agent) hubAnswered(ctx context.Context, ok bool) {
	c := &a.contact
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !ok && c.lostSince.IsZero():
		c.lostSince = time.Now()
	case !ok:
	case !c.lostSince.IsZero():
		long := time.Since(c.lostSince) > refreshAfter
		c.lostSince = time.Time{}
		if long && !c.refreshing {
			c.refreshing = true
			go a.refreshHub(ctx)
		}
	}
}

// refreshHub reads the assignments into a new cache and, once it has,
// drops the old one.
func (a *Agent) refreshHub(ctx context.Context) {
	defer func() {
		a.contact.mu.Lock()
		a.contact.refreshing = false
		a.contact.mu.Unlock()
	}()
	hc, err := a.newHubCache(ctx)
	if err == nil {
		sctx, cancel := context.WithTimeout(ctx, a.opts.HubRequestTimeout*3)
		if !toolscache.WaitForCacheSync(sctx.Done(), hc.informer.HasSynced) {
			err = fmt.Errorf("the assignments were not read within %s", a.opts.HubRequestTimeout*3)
			hc.stop()
		}
		cancel()
	}
	if err != nil {
		a.opts.Logger.Info("reading the assignments again after the hub was out of reach failed; the informer retries", "reason", err.Error())
		return
	}
	if old := a.hubCaches.Swap(hc); old != nil {
		old.stop()
	}
	a.opts.Logger.Info("the hub answers again: the assignments were read again")
	a.poke()
}
