package hub_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcclusters "sigs.k8s.io/multicluster-runtime/providers/clusters"

	"github.com/fleetgraph/fleetgraph/hub"
)

func TestLabelsFromGivesTheFunctionsLabelsAndTellsRelabels(t *testing.T) {
	labels := map[multicluster.ClusterName]map[string]string{"eu-1": {"region": "eu"}}
	p := hub.LabelsFrom(mcclusters.New(), func(name multicluster.ClusterName) map[string]string { return labels[name] })

	got := p.Labels("eu-1")
	assert.Equal(t, map[string]string{"region": "eu"}, got)
	got["region"] = "changed"
	assert.Equal(t, "eu", labels["eu-1"]["region"], "Labels returns a copy")
	assert.Nil(t, p.Labels("other"))

	var told []multicluster.ClusterName
	p.NotifyLabelsChanged(func(name multicluster.ClusterName) { told = append(told, name) })
	p.Relabelled("eu-1")
	assert.Equal(t, []multicluster.ClusterName{"eu-1"}, told)
}

func TestLabelsFromAnswersFromTheWrappedProvider(t *testing.T) {
	inner := &reporting{Provider: mcclusters.New(), failures: map[multicluster.ClusterName]string{"x": "Refused: why"}}
	p := hub.LabelsFrom(inner, func(multicluster.ClusterName) map[string]string { return nil })

	assert.Equal(t, inner.failures, p.EngagementFailures())
	assert.True(t, p.Registered("x"), "a ClusterRegistry's own answer")
	assert.False(t, p.Registered("y"))
	_, err := p.Get(t.Context(), "y")
	assert.ErrorIs(t, err, multicluster.ErrClusterNotFound)

	plain := hub.LabelsFrom(mcclusters.New(), func(multicluster.ClusterName) map[string]string { return nil })
	assert.Nil(t, plain.EngagementFailures())
	assert.False(t, plain.Registered("x"), "a provider without a registry is asked for its cluster names")
}

func TestLabelsFromStartsARunnableProvider(t *testing.T) {
	inner := &runnable{Provider: mcclusters.New(), started: make(chan struct{})}
	p := hub.LabelsFrom(inner, func(multicluster.ClusterName) map[string]string { return nil })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx, nil) }()
	<-inner.started
	cancel()
	require.NoError(t, <-done)

	plain := hub.LabelsFrom(stub{}, func(multicluster.ClusterName) map[string]string { return nil })
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	assert.NoError(t, plain.Start(ctx, nil), "a provider that is not runnable: Start waits for ctx")
}

type reporting struct {
	multicluster.Provider
	failures map[multicluster.ClusterName]string
}

func (r *reporting) EngagementFailures() map[multicluster.ClusterName]string { return r.failures }
func (r *reporting) Registered(name multicluster.ClusterName) bool {
	_, ok := r.failures[name]
	return ok
}

type runnable struct {
	multicluster.Provider
	started chan struct{}
}

func (r *runnable) Start(ctx context.Context, _ multicluster.Aware) error {
	close(r.started)
	<-ctx.Done()
	return nil
}

type stub struct{}

func (stub) Get(context.Context, multicluster.ClusterName) (cluster.Cluster, error) {
	return nil, multicluster.ErrClusterNotFound
}
func (stub) IndexField(context.Context, client.Object, string, client.IndexerFunc) error { return nil }
