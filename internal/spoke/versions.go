package spoke

import (
	"context"
	"errors"
	"slices"
	"sync"

	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// errSuperseded is what the gate of a version returns once a newer version
// of its graph was given to Serve: only the latest version may take a
// cluster over.
var errSuperseded = errors.New("spoke: a newer version of the graph was served meanwhile")

// graphVersions is what the Runtime knows of one graph (under its lock):
// the version last given to Serve and its controller, the older versions
// still serving somewhere, and which one serves each cluster.
//
// The rule it keeps: a cluster switches from one version to the next only
// when the next one's gate passes there. The previous version's member on
// that cluster is then retired, and the switch waits until its in-flight
// reconciles are done, so two versions never write on one cluster at once.
// An older version that serves no cluster anymore is stopped.
type graphVersions struct {
	latest Version
	// current serves latest; nil until the Runtime starts.
	current *controller
	older   []*controller
	serving map[multicluster.ClusterName]*controller
	// switching serialises the gates of the versions of this graph on one
	// cluster, so that an older version's gate never applies its CRD after
	// a newer one's did.
	switching map[multicluster.ClusterName]*sync.Mutex
}

func newGraphVersions() *graphVersions {
	return &graphVersions{
		serving:   map[multicluster.ClusterName]*controller{},
		switching: map[multicluster.ClusterName]*sync.Mutex{},
	}
}

// isCurrent reports whether c serves the latest version; false on a nil
// graphVersions (a graph stopped).
func (gv *graphVersions) isCurrent(c *controller) bool {
	return gv != nil && gv.current == c
}

// controllers returns the current and the older versions' controllers.
func (gv *graphVersions) controllers() []*controller {
	out := slices.Clone(gv.older)
	if gv.current != nil {
		out = append(out, gv.current)
	}
	return out
}

// switchLock returns the lock serialising the gates of c's graph on the
// named cluster, or nil once c is no longer the latest version.
func (rt *Runtime) switchLock(c *controller, cluster multicluster.ClusterName) *sync.Mutex {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	gv := rt.graphs[c.g.Name]
	if !gv.isCurrent(c) {
		return nil
	}
	l := gv.switching[cluster]
	if l == nil {
		l = &sync.Mutex{}
		gv.switching[cluster] = l
	}
	return l
}

// pass is every version's gate: it runs the caller's gate for c on the
// named cluster and, once that passes, makes c the version serving the
// cluster, retiring the one that served it before.
func (rt *Runtime) pass(ctx context.Context, c *controller, cluster multicluster.ClusterName, gate GateFunc) error {
	if rt.designated(c, cluster) {
		return nil // a fallback: its CRD is what the cluster serves already
	}
	l := rt.switchLock(c, cluster)
	if l == nil {
		return errSuperseded
	}
	l.Lock()
	defer l.Unlock()
	if gate != nil {
		gctx, cancel := either(ctx, c.ctx)
		err := gate(gctx, cluster, c.v)
		if err != nil {
			rt.fallBack(gctx, c, cluster)
		}
		cancel()
		if err != nil {
			return err
		}
	}
	rt.mu.Lock()
	gv := rt.graphs[c.g.Name]
	if !gv.isCurrent(c) {
		rt.mu.Unlock()
		return errSuperseded
	}
	prev := gv.serving[cluster]
	gv.serving[cluster] = c
	rt.mu.Unlock()
	if prev != nil && prev != c {
		prev.retire(cluster)
	}
	return nil
}

// dropUnserved ends o's members on the clusters it does not serve (their
// gate had not passed when a newer version came) and stops o if it serves
// none.
func (rt *Runtime) dropUnserved(graphName string, o *controller) {
	rt.mu.Lock()
	keep := map[multicluster.ClusterName]bool{}
	if gv := rt.graphs[graphName]; gv != nil {
		for name, sc := range gv.serving {
			keep[name] = sc == o
		}
	}
	rt.mu.Unlock()
	if o.retireExcept(func(name multicluster.ClusterName) bool { return keep[name] }) == 0 {
		rt.reap(o)
	}
}

// reap stops c if it is an older version of its graph; it serves no cluster
// anymore. Older versions never get new members, so it stays empty.
func (rt *Runtime) reap(c *controller) {
	rt.mu.Lock()
	gv := rt.graphs[c.g.Name]
	if gv == nil || gv.isCurrent(c) {
		rt.mu.Unlock()
		return
	}
	i := slices.Index(gv.older, c)
	if i < 0 {
		rt.mu.Unlock()
		return
	}
	gv.older = slices.Delete(gv.older, i, i+1)
	for name, sc := range gv.serving {
		if sc == c {
			delete(gv.serving, name)
		}
	}
	rt.mu.Unlock()
	c.stop()
}

// either returns a context that ends when a or b does. Its Err reports b's
// end at once, not only once the callback that closes Done has run, so that
// a gate that checks Err under its own lock after Stop returned never
// records anything for a stopped graph.
func either(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return eitherCtx{Context: ctx, other: b}, func() { stop(); cancel() }
}

type eitherCtx struct {
	context.Context
	other context.Context
}

func (c eitherCtx) Err() error {
	if err := c.other.Err(); err != nil {
		return err
	}
	return c.Context.Err()
}

// FallbackFunc is the public spoke.FallbackFunc, over this package's
// Version; fallBack calls it.
type FallbackFunc func(ctx context.Context, cluster multicluster.ClusterName, latest Version) (Version, error)

// SetFallback sets the fallback fallBack consults; before Start.
func (rt *Runtime) SetFallback(f FallbackFunc) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.fallback = f
}

// designated reports whether c, an older version, was chosen as the
// fallback serving the named cluster.
func (rt *Runtime) designated(c *controller, cluster multicluster.ClusterName) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	gv := rt.graphs[c.g.Name]
	return gv != nil && !gv.isCurrent(c) && gv.serving[cluster] == c
}

// fallBack serves the version the fallback finds on the named cluster, if
// no version serves it: latest, c, could not pass the gate there.
func (rt *Runtime) fallBack(ctx context.Context, c *controller, cluster multicluster.ClusterName) {
	e := rt.clusters.get(cluster)
	rt.mu.Lock()
	f, gv := rt.fallback, rt.graphs[c.g.Name]
	idle := gv.isCurrent(c) && gv.serving[cluster] == nil
	rt.mu.Unlock()
	if f == nil || e == nil || !idle {
		return
	}
	old, err := f(ctx, cluster, c.v)
	if err != nil || old.Graph == nil || old.Graph.Name != c.g.Name {
		if err != nil {
			c.log.Info("no previous version to serve meanwhile", "cluster", cluster.String(), "reason", err.Error())
		}
		return
	}
	rt.mu.Lock()
	gv = rt.graphs[c.g.Name]
	if !gv.isCurrent(c) || gv.serving[cluster] != nil || rt.clusters.get(cluster) != e {
		rt.mu.Unlock()
		return
	}
	oc := rt.newControllerLocked(old)
	gv.older = append(gv.older, oc)
	gv.serving[cluster] = oc
	rt.mu.Unlock()
	c.log.Info("serving a previous version meanwhile", "cluster", cluster.String(),
		"generation", old.Graph.Generation, "revision", old.Revision)
	oc.attach(e)
}
