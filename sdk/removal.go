package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/cleanup"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	rgdctrl "github.com/fleetgraph/fleetgraph/internal/rgd"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

const (
	// removalPoll is how often a removal checks whether instances still
	// hold the runtime's finalizer.
	removalPoll = time.Second
	// removalRetry and removalRetryMax shape the backoff of a failed step.
	removalRetry    = 500 * time.Millisecond
	removalRetryMax = 30 * time.Second
	// removalTimeout bounds one step on one cluster, so that a dead spoke
	// delays only itself.
	removalTimeout = 30 * time.Second
	// policySettle is how long a removal keeps serving after the admission
	// policy is deleted from a cluster: the API server stops applying a
	// deleted policy only once its own informer sees the deletion, and an
	// instance created meanwhile still gets the finalizer.
	policySettle = 5 * time.Second
)

// errHeld says that instances still hold the runtime's finalizer, or
// might still get it.
var errHeld = errors.New("instances still hold the finalizer")

// removal is a graph being unregistered. Until it is done, the graph's
// kind stays taken and its name cannot be registered by the other source.
type removal struct {
	reg    *registration
	uid    types.UID // of the RGD, when it came from one
	cancel context.CancelFunc
	done   chan struct{}
}

// The registry's side of removals: a removal is recorded in the registry,
// next to the served graphs, because it keeps its graph's kind taken.

// beginRemoval moves the named graph from the served ones to the ones
// being removed, and returns the removal's context, a child of parent.
func (r *registry) beginRemoval(parent context.Context, name string, uid types.UID) (context.Context, *removal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg := r.graphs[name]
	delete(r.graphs, name)
	ctx, cancel := context.WithCancel(parent)
	rm := &removal{reg: reg, uid: uid, cancel: cancel, done: make(chan struct{})}
	r.removals[name] = rm
	return ctx, rm
}

// removing is the named graph's removal under way; nil when there is none.
func (r *registry) removing(name string) *removal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removals[name]
}

// endRemoval forgets rm if it is still the named graph's removal. When it
// finished (not taken back), the graph's revision records go too, and an
// RGD's removal is remembered as finished for its UID.
func (r *registry) endRemoval(name string, rm *removal, finished bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if finished && r.revisions != nil {
		r.revisions.Forget(name) // its records go with its RGD
	}
	if r.removals[name] == rm {
		delete(r.removals, name)
	}
	if finished && rm.uid != "" {
		r.removed[name] = rm.uid
	}
}

// removalState is, at one instant, what the registry has under rgd's name:
// its removal under way, its registration, and whether the removal of
// that very RGD object finished. An RGD without a UID is gone: its
// finished removal is forgotten.
func (r *registry) removalState(rgd *v1alpha1.ResourceGraphDefinition) (*removal, *registration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	finished := rgd.UID != "" && r.removed[rgd.Name] == rgd.UID
	if rgd.UID == "" {
		delete(r.removed, rgd.Name) // the object is gone
	}
	return r.removals[rgd.Name], r.graphs[rgd.Name], finished
}

// stopRemovals calls stop under the lock and returns the removals under
// way then.
func (r *registry) stopRemovals(stop func()) []*removal {
	r.mu.Lock()
	defer r.mu.Unlock()
	stop()
	pending := make([]*removal, 0, len(r.removals))
	for _, rm := range r.removals {
		pending = append(pending, rm)
	}
	return pending
}

// remover removes unregistered graphs from every cluster, each in the
// background until done. What is being removed is in the registry
// (registry.removals), under its lock, since a removal keeps its graph's
// kind taken; the remover itself keeps no state.
type remover struct{ h *Hub }

// startLocked stops serving the named graph normally and removes it from
// every cluster in the background. The caller holds name's lock.
func (r *remover) startLocked(name string, orphan bool, uid types.UID) {
	h := r.h
	ctx, rm := h.beginRemoval(h.ctx, name, uid)
	reg := rm.reg
	removing := spoke.Version{Graph: reg.graph, Revision: reg.revision, Removal: spoke.RemovalFinalize}
	if orphan {
		removing.Removal = spoke.RemovalRelease
	}
	if reg.graph.IsHubGraph() {
		h.hubGraphs.Removing(name, orphan) // hubgraphs.go
	} else if err := h.runtime.Serve(removing); err != nil {
		h.opts.Logger.Error(err, "serving a graph being removed", "graph", name)
	}
	h.pull.poke() // pull.go
	h.opts.Logger.Info("graph unregistered; removing it from every cluster", "graph", name, "orphan", orphan)
	go r.run(ctx, name, rm)
}

// takeBack ends a removal of the named graph so that src can register it
// again: a source takes back its own graph (Go re-registering, or an RGD
// claimed again); the other source has to wait. The caller holds name's
// lock.
func (r *remover) takeBack(name string, src source) error {
	rm := r.h.removing(name)
	if rm == nil {
		return nil
	}
	if rm.reg.source != src {
		return fmt.Errorf("%w: graph %q", ErrRemoving, name)
	}
	rm.cancel()
	<-rm.done
	r.h.endRemoval(name, rm, false)
	return nil
}

// run repeats removal steps, with backoff on errors, until one finds
// nothing left to do or ctx ends.
func (r *remover) run(ctx context.Context, name string, rm *removal) {
	h := r.h
	defer close(rm.done)
	cleaned := map[*engaged]time.Time{}
	delay := removalRetry
	for {
		err := r.step(ctx, name, rm, cleaned)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errHeld) {
			delay = removalPoll
			h.opts.Logger.V(1).Info("removal waits for instances", "graph", name, "reason", err.Error())
		} else {
			h.opts.Logger.Info("removal step failed; retrying", "graph", name, "reason", err.Error(), "retry", delay)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		if !errors.Is(err, errHeld) {
			delay = min(2*delay, removalRetryMax)
		}
	}
	h.runtime.Stop(name)
	h.fanOut.Stop(name) // its fleet status goes
	h.registrar.compiles.forget(name, nil)
	h.sharding.forget(ctx, name)
	h.pull.removed(name) // pull.go: the assignments go
	h.endRemoval(name, rm, true)
	h.opts.Logger.Info("graph removed from every cluster", "graph", name)
	h.changed.notify(name)
}

// step takes the admission policy off every engaged cluster not cleaned
// yet, then checks that no instance holds the runtime's finalizer any more
// (the runtime finalizes or releases them meanwhile) and, if asked,
// deletes the unused CRDs. It returns errHeld (wrapped) while instances
// remain or a policy was deleted less than policySettle ago.
func (r *remover) step(ctx context.Context, name string, rm *removal, cleaned map[*engaged]time.Time) error {
	h := r.h
	g := rm.reg.graph
	if g.IsHubGraph() {
		return h.hubGraphRemovalStep(ctx, g) // hubgraphs.go
	}
	clusters := h.engagedClusters()
	errs := make([]error, len(clusters))
	done := make([]bool, len(clusters))
	held := make([]int, len(clusters))
	var wg sync.WaitGroup
	for i, e := range clusters {
		_, wasCleaned := cleaned[e]
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, removalTimeout)
			defer cancel()
			done[i], held[i], errs[i] = r.fromCluster(cctx, e, g, wasCleaned)
		})
	}
	wg.Wait()
	total, settled := 0, true
	for i, e := range clusters {
		if _, ok := cleaned[e]; done[i] && !ok {
			cleaned[e] = time.Now()
		}
		if at, ok := cleaned[e]; !ok || time.Since(at) < policySettle {
			settled = false
		}
		total += held[i]
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := h.pull.removalStep(name); err != nil { // pull.go
		return err
	}
	if total > 0 || !settled {
		return fmt.Errorf("%w: %d instances of %s (policy removal settled: %t)", errHeld, total, name, settled)
	}
	if !h.opts.CRDs.DeleteOnUnregister {
		return nil
	}
	h.runtime.Stop(name) // its instance watch would hold the CRD's informer
	list := make([]hub.Cluster, 0, len(clusters))
	for _, e := range clusters {
		list = append(list, e.hubCluster())
	}
	return cleanup.DeleteUnusedCRDs(ctx, list, g, func(ctx context.Context, c hub.Cluster) error {
		return h.removeAdmission(ctx, c, g)
	})
}

// fromCluster is one removal step on one cluster. It reports whether the
// policy is off, and how many instances still hold the finalizer.
func (r *remover) fromCluster(ctx context.Context, e *engaged, g *graph.Graph, cleaned bool) (bool, int, error) {
	if !cleaned {
		if err := r.h.removeAdmission(ctx, e.hubCluster(), g); err != nil {
			return false, 0, fmt.Errorf("cluster %q: %w", e.name, err)
		}
	}
	n, err := cleanup.HeldInstances(ctx, e.cl, g, contract.Finalizer)
	if err != nil {
		return true, 0, fmt.Errorf("cluster %q: %w", e.name, err)
	}
	return true, n, nil
}

// addStopper has stopAll run when the manager stops.
func (r *remover) addStopper(local manager.Manager) error {
	if err := local.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.stopAll()
		return nil
	})); err != nil {
		return fmt.Errorf("adding the removal stopper: %w", err)
	}
	return nil
}

// stopAll ends every background removal and departure and waits for them;
// the manager is stopping.
func (r *remover) stopAll() {
	h := r.h
	defer h.departures.wait()
	for _, rm := range h.stopRemovals(h.stop) {
		<-rm.done
	}
}

// rgdRegistry is the Hub as the RGD controller sees it: every graph it
// registers comes from an RGD object, and it removes only those.
type rgdRegistry struct{ h *Hub }

var _ rgdctrl.Registry = rgdRegistry{}

func (r rgdRegistry) Register(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (*graph.Graph, error) {
	return r.h.registrar.register(ctx, rgd, fromRGD)
}

func (r rgdRegistry) Serving(name string) *graph.Graph {
	if reg := r.h.lookup(name); reg != nil && reg.source == fromRGD {
		return reg.graph
	}
	return nil
}

func (r rgdRegistry) Revision(name string) int64 {
	if reg := r.h.lookup(name); reg != nil && reg.source == fromRGD {
		return reg.revision
	}
	return 0
}

func (r rgdRegistry) Status(name string) hub.GraphStatus { return r.h.sharding.fleetStatus(name) }

func (r rgdRegistry) Remove(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (bool, error) {
	h := r.h
	defer h.registrar.names.lock(rgd.Name)()
	rm, reg, finished := h.removalState(rgd)
	switch {
	case rm != nil:
		return rm.reg.source != fromRGD, nil
	case reg != nil && reg.source != fromRGD:
		return true, nil // not ours to remove
	case reg != nil:
		h.remover.startLocked(rgd.Name, r.orphans(rgd), rgd.UID)
		return false, nil
	case finished || !controllerutil.ContainsFinalizer(rgd, v1alpha1.FinalizerRGD):
		return true, nil
	}
	return r.resumeLocked(ctx, rgd)
}

// resumeLocked restarts the removal of an RGD's graph that this process
// never served, e.g. after a restart: the RGD still carries our finalizer,
// so its cleanup may not have finished.
func (r rgdRegistry) resumeLocked(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (bool, error) {
	h := r.h
	g, err := h.registrar.compile(ctx, rgd, fromRGD)
	switch {
	case errors.Is(err, rgdctrl.ErrCompiling):
		return false, nil // asked again once the compile ends
	case err != nil && !rememberable(err):
		return false, err
	case err != nil:
		return true, nil // never compiled, so never served
	}
	if h.add(&registration{graph: g, spec: *rgd.Spec.DeepCopy(), source: fromRGD}) != nil {
		return true, nil // its policy, if any, belongs to the graph serving the kind
	}
	h.remover.startLocked(rgd.Name, r.orphans(rgd), rgd.UID)
	return false, nil
}

func (r rgdRegistry) orphans(rgd *v1alpha1.ResourceGraphDefinition) bool {
	return r.h.opts.RGDs.OrphanInstances || rgd.Annotations[v1alpha1.AnnotationOrphanInstances] == "true"
}
