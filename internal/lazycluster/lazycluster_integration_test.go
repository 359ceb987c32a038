//go:build integration

package lazycluster_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/lazycluster"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A lazy cluster on a real API server: nothing built or running until it
// is used, then a cluster like any other, reads and informers at once and
// the field indexes asked for before.
func TestALazyClusterCostsNothingUntilUsed(t *testing.T) {
	srv, err := fgtesting.StartCluster("lazy", fgtesting.ClusterOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	ctx := t.Context()
	direct, err := client.New(srv.Config, client.Options{})
	require.NoError(t, err)
	require.NoError(t, direct.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: "default"}, Data: map[string]string{"k": "v"}}))

	cfg := rest.CopyConfig(srv.Config)
	cl, err := lazycluster.New(cfg)
	require.NoError(t, err)
	require.NoError(t, cl.GetFieldIndexer().IndexField(ctx, &corev1.ConfigMap{}, "data.k", func(o client.Object) []string {
		return []string{o.(*corev1.ConfigMap).Data["k"]}
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cl.Start(runCtx) }()
	assert.True(t, cl.GetCache().WaitForCacheSync(ctx), "an unused cache holds nothing and is synced")
	assert.Same(t, cfg, cl.GetConfig(), "its config is known without building it")
	resp, err := cl.GetHTTPClient().Get(cfg.Host + "/readyz")
	require.NoError(t, err, "its HTTP client answers without building it")
	_ = resp.Body.Close()
	assert.False(t, cl.Used())
	assert.NotContains(t, goroutines(), "cache/internal.(*Informers).Start", "no cache runs while unused")

	// The first read builds and starts it and finds the cache running.
	list := &corev1.ConfigMapList{}
	require.NoError(t, cl.GetClient().List(ctx, list, client.InNamespace("default"), client.MatchingFields{"data.k": "v"}))
	assert.True(t, cl.Used())
	require.Len(t, list.Items, 1, "the index asked for before the build serves the list")
	assert.Equal(t, "one", list.Items[0].Name)

	inf, err := cl.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	require.NoError(t, err)
	added := make(chan string, 10)
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) { added <- o.(*corev1.ConfigMap).Name }})
	require.NoError(t, err)
	require.NoError(t, direct.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two", Namespace: "default"}}))
	waitFor(t, added, "two")
	assert.Contains(t, goroutines(), "cache/internal.(*Informers).Start", "the cache runs once used")

	// Released, it stops its cache and costs nothing again.
	cl.Release()
	assert.False(t, cl.Used())
	require.Eventually(t, func() bool { return !strings.Contains(goroutines(), "cache/internal.(*Informers).Start") },
		30*time.Second, 50*time.Millisecond, "the released build's cache stops")

	// Used before it is acquired again (a reconcile in flight when its
	// replica handed the cluster over), it runs nothing: a cached read
	// fails at once, through its client or its cache, and so does asking
	// for an informer; a direct read reaches the server; no cache starts.
	var notStarted *cache.ErrCacheNotStarted
	err = cl.GetClient().List(ctx, &corev1.ConfigMapList{}, client.InNamespace("default"))
	require.ErrorAs(t, err, &notStarted, "a cached read through the client of a released cluster")
	err = cl.GetCache().Get(ctx, client.ObjectKey{Namespace: "default", Name: "one"}, &corev1.ConfigMap{})
	require.ErrorIs(t, err, lazycluster.ErrReleased)
	require.ErrorAs(t, err, &notStarted, "what controller-runtime's callers know")
	_, err = cl.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	require.ErrorIs(t, err, lazycluster.ErrReleased)
	got := &corev1.ConfigMap{}
	require.NoError(t, cl.GetAPIReader().Get(ctx, client.ObjectKey{Namespace: "default", Name: "one"}, got))
	assert.Equal(t, "v", got.Data["k"])
	assert.False(t, cl.Used(), "nothing is kept")
	assert.NotContains(t, goroutines(), "cache/internal.(*Informers).Start", "nothing runs")

	// Acquired, its next use builds it anew, with its index, and Start
	// runs that build.
	cl.Acquire()
	list = &corev1.ConfigMapList{}
	require.NoError(t, cl.GetClient().List(ctx, list, client.InNamespace("default"), client.MatchingFields{"data.k": "v"}))
	require.Len(t, list.Items, 1, "the index is added to the new build")
	assert.Contains(t, goroutines(), "cache/internal.(*Informers).Start", "the new build runs")

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not return after its context was cancelled")
	}
	cl.Release() // after Start returned: nothing to wait for
}

// A lazy cluster never used stops with its context, having started
// nothing; a config cluster.New refuses is refused by New.
func TestAnUnusedLazyClusterStopsAndABadOneIsRefused(t *testing.T) {
	cl, err := lazycluster.New(&rest.Config{Host: "https://127.0.0.1:1"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- cl.Start(ctx) }()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after its context was cancelled")
	}
	assert.False(t, cl.Used())
	assert.False(t, cl.GetCache().WaitForCacheSync(ctx), "a cancelled wait is not a sync")

	_, err = lazycluster.New(nil)
	require.Error(t, err)
}

// The watch health a cluster built with cacheopts.ReportWatchErrors keeps
// is found through a lazy cluster's cache, which builds it: without it the
// runtime would report no failing watch on such a cluster.
func TestALazyClusterKeepsItsWatchHealth(t *testing.T) {
	cl, err := lazycluster.New(&rest.Config{Host: "https://127.0.0.1:1"}, cacheopts.ReportWatchErrors)
	require.NoError(t, err)
	assert.False(t, cl.Used())
	assert.NotNil(t, cacheopts.HealthOf(cl))
	assert.True(t, cl.Used())
}

// goroutines is every goroutine's stack.
func goroutines() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

func waitFor(t *testing.T, names <-chan string, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-names:
			if got == want {
				return
			}
		case <-deadline:
			t.Fatalf("no event for %s", want)
		}
	}
}
