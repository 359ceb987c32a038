package sdk

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// ErrProviderMismatch is returned by SetupWithManager when the provider
// given to NewHub is not the manager's: the manager starts and engages the
// clusters of its own provider only, so a Hub with another one would serve
// none of its clusters.
var ErrProviderMismatch = errors.New("fleetgraph: the Hub's provider is not the manager's")

// defaultNoClusterWarning is how long a Hub with a provider waits for a first
// engaged cluster before it logs that it serves none.
const defaultNoClusterWarning = 30 * time.Second

// resolveProvider picks the provider the Hub serves: the manager's, in the
// multicluster-runtime idiom (the provider is given to mcmanager.New or
// WithMultiCluster and read back with GetProvider). The one given to NewHub,
// if any, must be that same provider. No provider at all is single-cluster
// mode: the manager's own cluster is the only spoke.
func resolveProvider(own multicluster.Provider, mgr mcmanager.Manager) (multicluster.Provider, error) {
	theirs := mgr.GetProvider()
	switch {
	case own == nil:
		return theirs, nil
	case theirs == nil:
		return nil, fmt.Errorf("%w: the manager has none; give the provider to mcmanager.New or mcmanager.WithMultiCluster", ErrProviderMismatch)
	case !sameProvider(own, theirs):
		return nil, fmt.Errorf("%w: NewHub got a %T, the manager has a %T; pass nil to NewHub to use the manager's", ErrProviderMismatch, own, theirs)
	}
	return theirs, nil
}

// sameProvider compares two providers without panicking on a dynamic type
// that is not comparable; such a provider is never taken for another.
func sameProvider(a, b multicluster.Provider) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

// warnWithoutClusters logs, once, when a Hub with a provider has engaged no
// cluster after h.noClusterWarning: typically the provider needs a setup
// call of its own (secret.Provider.SetupWithManager) that was left out, and
// without this the hub would serve nobody without a word.
func (h *Hub) warnWithoutClusters(ctx context.Context) error {
	t := time.NewTimer(h.noClusterWarning)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	h.mu.Lock()
	n := len(h.clusters)
	h.mu.Unlock()
	if n == 0 {
		h.opts.Logger.Info("warning: the provider has engaged no cluster yet, so no graph is served anywhere; "+
			"check that the provider is set up and started with the manager (e.g. secret.Provider.SetupWithManager, then mcmanager's Start)",
			"provider", fmt.Sprintf("%T", h.provider), "after", h.noClusterWarning.String())
	}
	<-ctx.Done()
	return nil
}

// setupClusterSource adds what engages the Hub's clusters beyond the
// provider itself: the manager's own cluster in single-cluster mode, or the
// warning for a provider that engages none.
func (h *Hub) setupClusterSource(mgr mcmanager.Manager) error {
	if h.provider == nil {
		h.opts.Logger.Info("no provider: single-cluster mode, the manager's own cluster is the only spoke")
		if err := mgr.GetLocalManager().Add(manager.RunnableFunc(h.serveLocal)); err != nil {
			return fmt.Errorf("adding single-cluster runnable: %w", err)
		}
		return nil
	}
	if err := mgr.GetLocalManager().Add(manager.RunnableFunc(h.warnWithoutClusters)); err != nil {
		return fmt.Errorf("adding the no-cluster warning: %w", err)
	}
	return nil
}
