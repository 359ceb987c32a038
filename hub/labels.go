package hub

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

var (
	_ multicluster.Provider         = &LabelledProvider{}
	_ multicluster.ProviderRunnable = &LabelledProvider{}
	_ ClusterLabeler                = &LabelledProvider{}
	_ ClusterLabelNotifier          = &LabelledProvider{}
	_ ClusterRegistry               = &LabelledProvider{}
	_ EngagementReporter            = &LabelledProvider{}
)

// registeredTimeout bounds the Get that Registered falls back on.
const registeredTimeout = 5 * time.Second

// LabelledProvider is a multicluster-runtime provider given labels by a
// function: see LabelsFrom.
type LabelledProvider struct {
	multicluster.Provider

	labels func(multicluster.ClusterName) map[string]string

	mu         sync.Mutex
	relabelled []func(multicluster.ClusterName)
}

// LabelsFrom gives the clusters of provider, a platform's own
// multicluster-runtime provider, the labels that placement, rollout waves,
// cluster.labels and fleet.clusters select by: labels(name) is a
// cluster's labels (nil for none). labels is called often, concurrently,
// and must be quick: answer from memory (a map the platform keeps, an
// informer's cache), never from a request. When a cluster's labels change,
// call Relabelled, and graphs follow at once rather than at the hub's next
// poll of the labels.
//
// Give the result, not provider, to the multicluster manager and to the
// hub. It starts provider when provider is a
// multicluster.ProviderRunnable, and answers the hub's other questions
// from provider where it can: Registered from its hub.ClusterRegistry, its
// ClusterNames or its Get; EngagementFailures from its
// hub.EngagementReporter, else none; SetupWithManager is passed on. A
// hub.Publisher (providers/kcp's APIExport provider) is not passed on: it
// labels its clusters itself; do not wrap it.
func LabelsFrom(provider multicluster.Provider, labels func(multicluster.ClusterName) map[string]string) *LabelledProvider {
	return &LabelledProvider{Provider: provider, labels: labels}
}

// Labels implements ClusterLabeler: a copy of what the label function
// gives for name.
func (p *LabelledProvider) Labels(name multicluster.ClusterName) map[string]string {
	return maps.Clone(p.labels(name))
}

// NotifyLabelsChanged implements ClusterLabelNotifier: f is called by
// Relabelled.
func (p *LabelledProvider) NotifyLabelsChanged(f func(multicluster.ClusterName)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.relabelled = append(p.relabelled, f)
}

// Relabelled tells the hub that the labels of the cluster called name
// changed: call it once the label function gives the new ones.
func (p *LabelledProvider) Relabelled(name multicluster.ClusterName) {
	p.mu.Lock()
	notify := slices.Clone(p.relabelled)
	p.mu.Unlock()
	for _, f := range notify {
		f(name)
	}
}

// Start implements multicluster.ProviderRunnable: it starts the wrapped
// provider if that is runnable, and otherwise waits for ctx.
func (p *LabelledProvider) Start(ctx context.Context, aware multicluster.Aware) error {
	if r, ok := p.Provider.(multicluster.ProviderRunnable); ok {
		return r.Start(ctx, aware)
	}
	<-ctx.Done()
	return nil
}

// Registered implements ClusterRegistry from the wrapped provider: its
// own answer when it is a ClusterRegistry, else whether its ClusterNames
// lists name, else whether its Get finds the cluster.
func (p *LabelledProvider) Registered(name multicluster.ClusterName) bool {
	switch inner := p.Provider.(type) {
	case ClusterRegistry:
		return inner.Registered(name)
	case interface {
		ClusterNames() []multicluster.ClusterName
	}:
		return slices.Contains(inner.ClusterNames(), name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), registeredTimeout)
	defer cancel()
	_, err := p.Get(ctx, name)
	return err == nil
}

// EngagementFailures implements EngagementReporter from the wrapped
// provider, when it is one; otherwise there are none.
func (p *LabelledProvider) EngagementFailures() map[multicluster.ClusterName]string {
	if r, ok := p.Provider.(EngagementReporter); ok {
		return r.EngagementFailures()
	}
	return nil
}

// SetupWithManager passes mgr on to the wrapped provider, if it has a
// SetupWithManager of this form (fleetgraph's providers do), so that
// sdk.Hub.Run sets it up; otherwise it does nothing.
func (p *LabelledProvider) SetupWithManager(mgr mcmanager.Manager) error {
	if s, ok := p.Provider.(interface {
		SetupWithManager(mcmanager.Manager) error
	}); ok {
		return s.SetupWithManager(mgr)
	}
	return nil
}
