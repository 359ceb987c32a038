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

// versions is what the Runtime knows of one graph's versions besides the
// latest: which one serves each cluster, and the older ones still serving
// somewhere.
//
// The rule it keeps: a cluster switches from one version to the next only
// when the next one's gate passes there. The previous version's member on
// that cluster is then retired, and the switch waits until its in-flight
// reconciles are done, so two versions never write on one cluster at once.
// An older version that serves no cluster anymore is stopped.
type versions struct {
	older   []*controller
	serving map[multicluster.ClusterName]*controller
	// switching serialises the gates of the versions of this graph on one
	// cluster, so that an older version's gate never applies its CRD after
	// a newer one's did.
	switching map[multicluster.ClusterName]*sync.Mutex
}

func (rt *Runtime) versionsLocked(graphName string) *versions {
	v := rt.versions[graphName]
	if v == nil {
		v = &versions{
			serving:   map[multicluster.ClusterName]*controller{},
			switching: map[multicluster.ClusterName]*sync.Mutex{},
		}
		rt.versions[graphName] = v
	}
	return v
}

// latestLocked reports whether c is the latest version of its graph.
func (rt *Runtime) latestLocked(c *controller) bool {
	return rt.controllers[c.g.Name] == c
}

// switchLock returns the lock serialising the gates of c's graph on the
// named cluster, or nil once c is no longer the latest version.
func (rt *Runtime) switchLock(c *controller, cluster multicluster.ClusterName) *sync.Mutex {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if !rt.latestLocked(c) {
		return nil
	}
	v := rt.versionsLocked(c.g.Name)
	l := v.switching[cluster]
	if l == nil {
		l = &sync.Mutex{}
		v.switching[cluster] = l
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
	if !rt.latestLocked(c) {
		rt.mu.Unlock()
		return errSuperseded
	}
	v := rt.versionsLocked(c.g.Name)
	prev := v.serving[cluster]
	v.serving[cluster] = c
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
	if v := rt.versions[graphName]; v != nil {
		for name, sc := range v.serving {
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
	v := rt.versions[c.g.Name]
	if v == nil || rt.latestLocked(c) {
		rt.mu.Unlock()
		return
	}
	i := slices.Index(v.older, c)
	if i < 0 {
		rt.mu.Unlock()
		return
	}
	v.older = slices.Delete(v.older, i, i+1)
	for name, sc := range v.serving {
		if sc == c {
			delete(v.serving, name)
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

// FallbackFunc finds the version of a graph a cluster served before, for a
// cluster that the latest version (latest) cannot be served on yet and that
// no version serves, typically right after the hub restarted. It returns a
// Version with a nil Graph (and no error) when there is none. The returned
// graph must have been compiled from an earlier spec of the same graph
// whose CRD is the one on the cluster: it is served there without passing
// the gate, until latest's gate passes.
type FallbackFunc func(ctx context.Context, cluster multicluster.ClusterName, latest Version) (Version, error)

// SetFallback sets the function that finds the version to serve on a
// cluster the latest version cannot take yet. Call it before Start.
// Defaults to none: such a cluster is not served until the gate passes.
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
	v := rt.versions[c.g.Name]
	return v != nil && !rt.latestLocked(c) && v.serving[cluster] == c
}

// fallBack serves the version the fallback finds on the named cluster, if
// no version serves it: latest, c, could not pass the gate there.
func (rt *Runtime) fallBack(ctx context.Context, c *controller, cluster multicluster.ClusterName) {
	rt.mu.Lock()
	f, e := rt.fallback, rt.clusters[cluster]
	var v *versions
	if rt.latestLocked(c) { // a graph served before Start has no entry yet
		v = rt.versionsLocked(c.g.Name)
	}
	idle := v != nil && v.serving[cluster] == nil
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
	if !rt.latestLocked(c) || v.serving[cluster] != nil || rt.clusters[cluster] != e {
		rt.mu.Unlock()
		return
	}
	oc := rt.newControllerLocked(old)
	v.older = append(v.older, oc)
	v.serving[cluster] = oc
	rt.mu.Unlock()
	c.log.Info("serving a previous version meanwhile", "cluster", cluster.String(),
		"generation", old.Graph.Generation, "revision", old.Revision)
	oc.attach(e)
}
