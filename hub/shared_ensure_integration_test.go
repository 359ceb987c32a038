//go:build integration

package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// requestLog counts the requests clusters send, by method and path.
type requestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

// count returns how many requests had method and a path containing part,
// and forgets every request.
func (l *requestLog) count(method, part string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.seen {
		if strings.HasPrefix(s, method+" ") && strings.Contains(s, part) {
			n++
		}
	}
	return n
}

func (l *requestLog) reset() {
	l.mu.Lock()
	l.seen = nil
	l.mu.Unlock()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// sameServerClusters engages with f n clusters that reach cfg's server
// with cfg's identity, each with its own connection, all counted in log,
// and returns their names.
func sameServerClusters(t *testing.T, f *hub.FanOut, prefix string, cfg *rest.Config, n int, log *requestLog) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		hc, err := rest.HTTPClientFor(cfg)
		require.NoError(t, err)
		hc.Transport = log.wrap(hc.Transport)
		cl, err := cluster.New(cfg, func(o *cluster.Options) { o.HTTPClient = hc })
		require.NoError(t, err)
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
		engage(t, f, out[i], cl)
	}
	return out
}

// Clusters behind one API server with one identity share Ensure's work:
// many at once cost one apply, a later one a metadata read; a CRD taken
// over or deleted since is still refused or put back; another identity is
// checked on its own.
func TestEnsureIsSharedByClustersOfOneServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := graphOf("shared", schema.GroupVersionKind{Group: "shared.fleetgraph.dev", Version: "v1", Kind: "App"}, "apps",
		deploymentGVK, serviceGVK)
	log := &requestLog{}
	f := hub.New(hub.Options{})
	clusters := sameServerClusters(t, f, "shared", fleet.Hub.Config, 10, log)
	const crds = "customresourcedefinitions"

	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = f.Ensure(ctx, clusters[i], g) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, clusters[i])
	}
	assert.Equal(t, 1, log.count(http.MethodPatch, crds), "one apply for eight clusters of one server")

	log.reset()
	require.NoError(t, f.Ensure(ctx, clusters[8], g))
	assert.Equal(t, 1, log.count(http.MethodGet, crds+"/"+g.CRD.Name), "a later cluster reads the CRD once")
	assert.Equal(t, 0, log.count(http.MethodPatch, crds), "and applies nothing")
	assert.Equal(t, 0, log.count(http.MethodGet, "/apis/apps"), "nor asks discovery")

	admin, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: g.CRD.Name}, crd))
	crd.Labels[v1alpha1.LabelManagedBy] = "someone-else"
	require.NoError(t, admin.Update(ctx, crd))
	err = f.Ensure(ctx, clusters[1], g)
	require.ErrorIs(t, err, hub.ErrConflict, "a CRD taken over since the shared check is refused")

	require.NoError(t, admin.Delete(ctx, crd))
	require.Eventually(t, func() bool {
		return apiextensionsNotFound(ctx, admin, g.CRD.Name)
	}, hub.DefaultEstablishTimeout, 10*time.Millisecond)
	log.reset()
	require.NoError(t, f.Ensure(ctx, clusters[2], g), "a deleted CRD is put back")
	// Put back by this Ensure, or already by the fan-out's repair of a
	// CRD it keeps (repair.go), which may win the race: either way once.
	assert.LessOrEqual(t, log.count(http.MethodPatch, crds), 1)
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: g.CRD.Name}, crd))
	assert.Equal(t, v1alpha1.ManagedByFleetgraph, crd.Labels[v1alpha1.LabelManagedBy], "the CRD is back, and ours")

	other := rest.CopyConfig(fleet.Hub.Config)
	other.Impersonate = rest.ImpersonationConfig{UserName: "other-admin", Groups: []string{"system:masters"}}
	log.reset()
	require.NoError(t, f.Ensure(ctx, sameServerClusters(t, f, "other", other, 1, log)[0], g))
	assert.Equal(t, 1, log.count(http.MethodPatch, crds), "another identity runs its own check")
}

func apiextensionsNotFound(ctx context.Context, c client.Client, name string) bool {
	err := c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
	return client.IgnoreNotFound(err) == nil && err != nil
}
