package testing_test

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

// seen records the requests a multicluster controller received and the
// engagements a manager made, for tests that check who hears what.
type seen struct {
	mu       sync.Mutex
	requests map[string]bool // "cluster/namespace/name"
	engaged  map[string]context.Context
}

func newSeen() *seen {
	return &seen{requests: map[string]bool{}, engaged: map[string]context.Context{}}
}

func (s *seen) Reconcile(_ context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[fmt.Sprintf("%s/%s", req.ClusterName, req.NamespacedName)] = true
	return ctrl.Result{}, nil
}

func (s *seen) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.engaged[string(name)] = ctx
	return nil
}

func (s *seen) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[key]
}

// engagement returns the context the cluster was engaged with, or nil.
func (s *seen) engagement(name string) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engaged[name]
}

// startWatchManager starts a multicluster manager over provider with one
// controller for objects of watched's kind that records into the returned
// seen. The manager
// stops when ctx is cancelled; the returned channel yields its error.
func startWatchManager(ctx context.Context, cfg *rest.Config, provider multicluster.Provider, watched client.Object) (*seen, <-chan error, error) {
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, nil, err
	}
	s := newSeen()
	if err := mgr.Add(engageRecorder{s}); err != nil {
		return nil, nil, err
	}
	skip := true
	err = mcbuilder.ControllerManagedBy(mgr).
		Named("watch").
		WithOptions(controller.TypedOptions[mcreconcile.Request]{SkipNameValidation: &skip}).
		For(watched).
		Complete(s)
	if err != nil {
		return nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return s, done, nil
}

// engageRecorder is a runnable that only records engagements.
type engageRecorder struct{ *seen }

func (engageRecorder) Start(ctx context.Context) error { <-ctx.Done(); return nil }

func names(in []multicluster.ClusterName) []string {
	out := make([]string, len(in))
	for i, n := range in {
		out[i] = string(n)
	}
	return out
}
