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

// clusterSource is what engages the Hub's clusters beyond the provider
// itself, and what the Hub asks the provider about them (cluster_labels.go).
type clusterSource struct {
	h *Hub
	// noClusterWarning is how long a Hub with a provider may engage no
	// cluster before it says so. Set before the manager starts.
	noClusterWarning time.Duration
}

// warnWithoutClusters logs, once, when a Hub with a provider has engaged no
// cluster after noClusterWarning: typically the provider needs a setup
// call of its own (secret.Provider.SetupWithManager) that was left out, and
// without this the hub would serve nobody without a word.
func (s *clusterSource) warnWithoutClusters(ctx context.Context) error {
	h := s.h
	t := time.NewTimer(s.noClusterWarning)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	if len(h.engagedClusters()) == 0 {
		h.opts.Logger.Info("warning: the provider has engaged no cluster yet, so no graph is served anywhere; "+
			"check that the provider is set up and started with the manager (e.g. secret.Provider.SetupWithManager, then mcmanager's Start)",
			"provider", fmt.Sprintf("%T", h.provider), "after", s.noClusterWarning.String())
	}
	<-ctx.Done()
	return nil
}

// setup adds what engages the Hub's clusters beyond the
// provider itself: the manager's own cluster in single-cluster mode, or the
// warning for a provider that engages none.
func (s *clusterSource) setup(mgr mcmanager.Manager) error {
	h := s.h
	if h.provider == nil {
		h.opts.Logger.Info("no provider: single-cluster mode, the manager's own cluster is the only spoke")
		serve := func(ctx context.Context) error { return s.serveLocal(ctx, mgr.GetLocalManager()) }
		if err := mgr.GetLocalManager().Add(manager.RunnableFunc(serve)); err != nil {
			return fmt.Errorf("adding single-cluster runnable: %w", err)
		}
		return nil
	}
	if err := mgr.GetLocalManager().Add(manager.RunnableFunc(s.warnWithoutClusters)); err != nil {
		return fmt.Errorf("adding the no-cluster warning: %w", err)
	}
	return nil
}

// addAware adds what each engaged cluster is handed to, in this order:
// the fan-out, the cluster tracker and the instance runtime (serveLocal
// engages them in the same order).
func (s *clusterSource) addAware(mgr mcmanager.Manager) error {
	h := s.h
	if err := mgr.Add(h.fanOut); err != nil {
		return fmt.Errorf("adding the fan-out: %w", err)
	}
	if err := mgr.Add(clusterTracker{h}); err != nil {
		return fmt.Errorf("adding cluster tracker: %w", err)
	}
	if err := mgr.Add(h.runtime); err != nil {
		return fmt.Errorf("adding instance runtime: %w", err)
	}
	return nil
}

// serveLocal engages the manager's own cluster, in single-cluster mode.
func (s *clusterSource) serveLocal(ctx context.Context, local manager.Manager) error {
	h := s.h
	if err := h.fanOut.Engage(ctx, mcmanager.LocalCluster, local); err != nil {
		return err
	}
	if err := (clusterTracker{h}).Engage(ctx, mcmanager.LocalCluster, local); err != nil {
		return err
	}
	if err := h.runtime.Engage(ctx, mcmanager.LocalCluster, local); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
