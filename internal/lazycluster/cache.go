package lazycluster

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
)

// lazyCache is a Cluster's cache: reads and informers build and start the
// cluster; before that it is synced and records field indexes.
type lazyCache struct{ c *Cluster }

var _ cacheopts.Unwrapper = &lazyCache{}

// Unwrap builds and starts the cluster and returns its cache, for those
// that look into a cluster's cache (cacheopts.HealthOf).
func (l *lazyCache) Unwrap() cache.Cache { return l.c.use().GetCache() }

// inner is the built cluster's cache, or nil when it is not built.
func (l *lazyCache) inner() cache.Cache {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	if l.c.gen.built == nil {
		return nil
	}
	return l.c.gen.built.GetCache()
}

func (l *lazyCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	in, err := l.serving()
	if err != nil {
		return err
	}
	return in.Get(ctx, key, obj, opts...)
}

func (l *lazyCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	in, err := l.serving()
	if err != nil {
		return err
	}
	return in.List(ctx, list, opts...)
}

func (l *lazyCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	in, err := l.serving()
	if err != nil {
		return nil, err
	}
	return in.GetInformer(ctx, obj, opts...)
}

func (l *lazyCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	in, err := l.serving()
	if err != nil {
		return nil, err
	}
	return in.GetInformerForKind(ctx, gvk, opts...)
}

// serving builds and starts the cluster and returns its cache, or
// ErrReleased between Release and Acquire: a read or an informer asked
// for then builds nothing at all.
func (l *lazyCache) serving() (cache.Cache, error) {
	l.c.mu.Lock()
	released := l.c.released
	l.c.mu.Unlock()
	if released {
		return nil, ErrReleased
	}
	return l.c.use().GetCache(), nil
}

// RemoveInformer removes nothing from a cluster not built yet.
func (l *lazyCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	if in := l.inner(); in != nil {
		return in.RemoveInformer(ctx, obj)
	}
	return nil
}

// Start is the Cluster's: its Start runs the built cache.
func (l *lazyCache) Start(ctx context.Context) error { return l.c.Start(ctx) }

// WaitForCacheSync reports a cache not built yet synced: it holds nothing.
func (l *lazyCache) WaitForCacheSync(ctx context.Context) bool {
	if in := l.inner(); in != nil {
		return in.WaitForCacheSync(ctx)
	}
	return ctx.Err() == nil
}

// IndexField indexes the built cache, if any, and records the index for
// every build to come.
func (l *lazyCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	l.c.mu.Lock()
	l.c.indexes = append(l.c.indexes, index{obj: obj, field: field, extract: extract})
	built := l.c.gen.built
	l.c.mu.Unlock()
	if built == nil {
		return nil
	}
	return built.GetFieldIndexer().IndexField(ctx, obj, field, extract)
}
