package sdk

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/cleanup"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/reach"
)

// A cluster that leaves the fleet (its kubeconfig Secret deleted, its
// workspace gone) is served no more, so nothing would ever finalize its
// instances: the admission policy would stamp our finalizer on new ones and
// no delete could finish. While the cluster can still be reached, the hub
// cleans up after it as a removal with the orphan option does: the policy
// goes, and every instance is released (our finalizer taken off; children
// stay). Rotated credentials re-engage a cluster under the same name at
// once, and a stopping hub disengages every cluster: neither is a
// departure, hence the grace period and the check of the hub's own context.

const (
	// departureTimeout bounds the whole clean-up after one cluster.
	departureTimeout = 2 * time.Minute
	// departureProbe bounds the check, before each attempt, that the
	// cluster still answers: one that does not is left as it is at once.
	departureProbe = 5 * time.Second
	// departureRecheck is the least time between two looks at a cluster
	// that left but that the provider still knows.
	departureRecheck = time.Second
)

// departures cleans up after the clusters that left. It owns the
// clean-ups under way, which the remover waits for when the manager stops
// (remover.stopAll).
type departures struct {
	h *Hub
	// mu guards waiting, so that no clean-up starts (wg.Go) once wait has
	// begun: a WaitGroup's Add must not race with its Wait. No other lock
	// is taken while it is held.
	mu      sync.Mutex
	waiting bool
	wg      sync.WaitGroup
}

// departed is called when cluster e was disengaged while the hub runs.
func (d *departures) departed(e *engaged) {
	h := d.h
	if h.opts.Fleet.DepartureGrace < 0 {
		return
	}
	// Checked and counted under d.mu, so that wait's Wait never races
	// with this Go; the hub stopping (h.ctx) is not a departure.
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting || h.ctx.Err() != nil {
		return
	}
	d.wg.Go(func() {
		if d.comesBack(e.name) {
			return
		}
		d.cleanUpAfter(e)
	})
}

// wait returns once every clean-up has ended; none starts after it is
// called. The manager is stopping.
func (d *departures) wait() {
	d.mu.Lock()
	d.waiting = true
	d.mu.Unlock()
	d.wg.Wait()
}

// comesBack waits for the grace period, and for as long after it as the
// provider still knows a cluster called name, and reports whether that
// cluster was engaged again (a rotation) or the hub is stopping. Engaging
// rotated credentials can take longer than any fixed grace on a loaded
// hub (a new client, a cache to sync): the provider knowing the name says
// that it is on its way back.
func (d *departures) comesBack(name string) bool {
	h := d.h
	for wait := h.opts.Fleet.DepartureGrace; ; wait = max(h.opts.Fleet.DepartureGrace, departureRecheck) {
		select {
		case <-h.ctx.Done():
			return true // the hub is stopping, not the cluster leaving
		case <-time.After(wait):
		}
		if h.cluster(name) != nil {
			return true
		}
		if !d.provides(name) {
			return false
		}
	}
}

// ClusterRegistry is implemented by providers that know which clusters are
// registered with them, engaged or not; see hub.ClusterRegistry, which it
// names for the façade's users.
type ClusterRegistry = hub.ClusterRegistry

// provides reports whether the hub's provider still has a cluster called
// name, engaged or on its way to be.
func (d *departures) provides(name string) bool {
	h := d.h
	if h.provider == nil {
		return false
	}
	if r, ok := h.provider.(ClusterRegistry); ok {
		return r.Registered(multicluster.ClusterName(name))
	}
	if lister, ok := h.provider.(interface {
		ClusterNames() []multicluster.ClusterName
	}); ok {
		return slices.Contains(lister.ClusterNames(), multicluster.ClusterName(name))
	}
	ctx, cancel := context.WithTimeout(h.ctx, departureProbe)
	defer cancel()
	_, err := h.provider.Get(ctx, multicluster.ClusterName(name))
	return err == nil
}

// cleanUpAfter takes every graph's admission policy off e and releases its
// instances, retrying until done, the timeout or the hub's end.
func (d *departures) cleanUpAfter(e *engaged) {
	h := d.h
	ctx, cancel := context.WithTimeout(h.ctx, departureTimeout)
	defer cancel()
	log := h.opts.Logger.WithValues("cluster", e.name)
	for delay := removalRetry; ; delay = min(2*delay, removalRetryMax) {
		if err := reach.Probe(ctx, e.cl, "", departureProbe); err != nil {
			log.Info("a cluster that left cannot be reached: its admission policies and finalizers stay",
				"reason", err.Error())
			return
		}
		released, err := d.releaseAll(ctx, e)
		if err == nil {
			log.Info("cluster left the fleet: admission policies removed, instances released", "released", released)
			return
		}
		log.Info("cleaning up after a cluster that left; retrying", "reason", err.Error(), "retry", delay)
		select {
		case <-ctx.Done():
			log.Info("gave up cleaning up after a cluster that left: its admission policies and finalizers stay",
				"reason", err.Error())
			return
		case <-time.After(delay):
		}
	}
}

func (d *departures) releaseAll(ctx context.Context, e *engaged) (int, error) {
	h := d.h
	total := 0
	var errs []error
	for _, g := range h.allGraphs() {
		if err := h.removeAdmission(ctx, e.hubCluster(), g); err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := cleanup.ReleaseInstances(ctx, e.cl, g, contract.Finalizer)
		total += n
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}
