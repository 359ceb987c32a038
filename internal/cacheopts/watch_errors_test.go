package cacheopts

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// heard records the kinds a listener was told about.
type heard struct{ kinds []schema.GroupVersionKind }

func (h *heard) WatchHealthChanged(gvk schema.GroupVersionKind) { h.kinds = append(h.kinds, gvk) }

// erring is a ListerWatcher whose calls return err.
func erring(err *error) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &metav1.PartialObjectMetadataList{}, *err
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (apiwatch.Interface, error) {
			return apiwatch.NewEmptyWatch(), *err
		},
	}
}

func TestWatchHealthTellsTransitionsAndCountsFailures(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	h := newHealth()
	l := &heard{}
	h.Listen("unit-cluster", l, gvk)
	var err error
	lw := h.Observe(gvk, erring(&err)).(toolscache.ListerWatcherWithContext)
	ctx := context.Background()
	count := func() float64 {
		return testutil.ToFloat64(watchErrorsTotal.WithLabelValues("unit-cluster", "apps/v1/Deployment"))
	}
	failing := func() float64 {
		return testutil.ToFloat64(watchesFailing.WithLabelValues("unit-cluster", "apps/v1/Deployment"))
	}

	_, _ = lw.ListWithContext(ctx, metav1.ListOptions{})
	assert.Empty(t, l.kinds, "a success of a healthy kind is no news")

	err = apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New("no"))
	_, _ = lw.ListWithContext(ctx, metav1.ListOptions{})
	_, _ = lw.WatchWithContext(ctx, metav1.ListOptions{})
	assert.Equal(t, []schema.GroupVersionKind{gvk}, l.kinds, "told once when the kind starts failing")
	assert.Equal(t, 2.0, count())
	assert.Equal(t, 1.0, failing())
	failingNow := h.Failing([]schema.GroupVersionKind{gvk})
	require.Contains(t, failingNow, gvk)
	assert.Contains(t, failingNow[gvk].Error(), "forbidden")

	err = apierrors.NewResourceExpired("too old")
	_, _ = lw.WatchWithContext(ctx, metav1.ListOptions{})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = context.Canceled
	_, _ = lw.ListWithContext(cancelled, metav1.ListOptions{})
	assert.Len(t, l.kinds, 1, "an expired version or a stopping informer is no news")
	assert.Equal(t, 2.0, count())

	err = nil
	_, _ = lw.WatchWithContext(ctx, metav1.ListOptions{})
	assert.Len(t, l.kinds, 2, "told when the kind works again")
	assert.Equal(t, 0.0, failing())
	assert.Empty(t, h.Failing([]schema.GroupVersionKind{gvk}))

	h.Forget(l)
	assert.Zero(t, clusterSeries(t, "unit-cluster"), "the cluster's series go with its last listener")
	err = errors.New("late")
	_, _ = lw.ListWithContext(ctx, metav1.ListOptions{})
	assert.Zero(t, clusterSeries(t, "unit-cluster"), "no series for a cluster nobody listens to")
}

// clusterSeries counts the series of the watch metrics for cluster.
func clusterSeries(t *testing.T, cluster string) int {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	n := 0
	for _, f := range families {
		if f.GetName() != "fleetgraph_spoke_watch_errors_total" && f.GetName() != "fleetgraph_spoke_watches_failing" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == cluster {
					n++
				}
			}
		}
	}
	return n
}
