package pull

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// The Source reads the hub through a cache: every PullCluster, the
// GraphAssignments the hub wrote, every GraphReport and the agents'
// Leases (by name). After the hub's API server was out of reach for a
// while, the informers of that cache retry with a backoff that grows to
// half a minute and more, so the hub would show the agents' reports late
// and miss their heartbeats; the Source then reads everything again into
// a new cache and drops the old one (refresh).

// refreshTimeout bounds the first read of a new cache.
const refreshTimeout = 30 * time.Second

// hubCache is one cache of the hub and what stops it.
type hubCache struct {
	cache.Cache
	stop context.CancelFunc
}

// reader is the current cache; nil before Start read the hub.
func (s *Source) reader() cache.Cache {
	if hc := s.caches.Load(); hc != nil {
		return hc.Cache
	}
	return nil
}

// newCache starts a cache of the pull objects, with the Source's event
// handlers, and waits until it has read them (or ctx ends).
func (s *Source) newCache(ctx context.Context) (*hubCache, error) {
	ours, err := labels.NewRequirement(fgv1alpha1.LabelPullCluster, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("pull: %w", err)
	}
	ca, err := cache.New(s.opts.Config, cache.Options{
		Scheme: s.scheme,
		ByObject: map[client.Object]cache.ByObject{
			&fgv1alpha1.GraphAssignment{}: {Label: labels.NewSelector().Add(*ours)},
			&coordinationv1.Lease{}:       {Field: fields.OneTermEqualSelector("metadata.name", fgv1alpha1.PullAgentName)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("pull: a cache of the hub: %w", err)
	}
	cctx, stop := context.WithCancel(ctx)
	handlers := map[client.Object]toolscache.ResourceEventHandler{
		&fgv1alpha1.PullCluster{}:     s.onObject(s.clusterOf),
		&fgv1alpha1.GraphAssignment{}: s.onObject(s.namespaceCluster),
		&fgv1alpha1.GraphReport{}:     s.onReport(),
		&coordinationv1.Lease{}:       s.onLease(),
	}
	for obj, h := range handlers {
		inf, err := ca.GetInformer(cctx, obj, cache.BlockUntilSynced(false))
		if err == nil {
			_, err = inf.AddEventHandler(h)
		}
		if err != nil {
			stop()
			return nil, fmt.Errorf("pull: watching %T: %w", obj, err)
		}
	}
	go func() { _ = ca.Start(cctx) }()
	if !ca.WaitForCacheSync(ctx) {
		stop()
		return nil, fmt.Errorf("pull: the hub's pull objects were not read: %w", context.Cause(ctx))
	}
	return &hubCache{Cache: ca, stop: stop}, nil
}

// refresh reads the hub into a new cache and, once it has, drops the old
// one; on failure the old one stays.
func (s *Source) refresh(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	hc, err := s.newCacheUntil(ctx, rctx)
	if err != nil {
		s.opts.Logger.Info("reading the hub again after it was out of reach failed; the informers retry", "reason", err.Error())
		return
	}
	if old := s.caches.Swap(hc); old != nil {
		old.stop()
	}
	s.opts.Logger.Info("the hub's API server answers again: its pull objects were read again")
	s.Poke()
}

// newCacheUntil is newCache whose cache lives as long as ctx, and whose
// first read is bounded by sync.
func (s *Source) newCacheUntil(ctx, sync context.Context) (*hubCache, error) {
	done := make(chan struct{})
	var hc *hubCache
	var err error
	lctx, stop := context.WithCancel(ctx)
	go func() {
		defer close(done)
		hc, err = s.newCache(lctx)
	}()
	select {
	case <-done:
	case <-sync.Done():
		stop()
		<-done
		return nil, fmt.Errorf("not read within %s", refreshTimeout)
	}
	if err != nil {
		stop()
		return nil, err
	}
	inner := hc.stop
	hc.stop = func() { inner(); stop() }
	return hc, nil
}
