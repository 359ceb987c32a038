//go:build integration

package hub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
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

// sameServerClusters returns n clusters that reach cfg's server with cfg's
// identity, each with its own connection, all counted in log.
func sameServerClusters(t *testing.T, cfg *rest.Config, n int, log *requestLog) []Cluster {
	t.Helper()
	out := make([]Cluster, n)
	for i := range out {
		hc, err := rest.HTTPClientFor(cfg)
		require.NoError(t, err)
		hc.Transport = log.wrap(hc.Transport)
		cl, err := cluster.New(cfg, func(o *cluster.Options) { o.HTTPClient = hc })
		require.NoError(t, err)
		out[i] = Cluster{Name: fmt.Sprintf("shared-%d", i), Cluster: cl}
	}
	return out
}

// Clusters behind one API server with one identity share Ensure's work:
// many at once cost one apply, a later one a metadata read; a CRD taken
// over or deleted since is still refused or put back; another identity is
// checked on its own.
func TestEnsureIsSharedByClustersOfOneServer(t *testing.T) {
	ctx := context.Background()
	fleet := fgtesting.StartFleet(t, 0)
	rgds, err := v1alpha1.LoadFile("../../examples/quickstart/webapp.yaml")
	require.NoError(t, err)
	g, err := graph.Compile(rgds[0], graph.Options{})
	require.NoError(t, err)
	log := &requestLog{}
	clusters := sameServerClusters(t, fleet.Hub.Config, 10, log)
	tracker := &Tracker{}
	f := NewFanOut(tracker, FanOutOptions{DisableAdmissionPolicy: true})
	t.Cleanup(func() {
		for _, c := range clusters {
			tracker.DropCluster(c.Name)
			ForgetCluster(c.Name)
		}
	})
	const crds = "customresourcedefinitions"

	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = f.Ensure(ctx, clusters[i], g, 0) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, clusters[i].Name)
	}
	assert.Equal(t, 1, log.count(http.MethodPatch, crds), "one apply for eight clusters of one server")

	log.reset()
	require.NoError(t, f.Ensure(ctx, clusters[8], g, 0))
	assert.Equal(t, 1, log.count(http.MethodGet, crds+"/"+g.CRD.Name), "a later cluster reads the CRD once")
	assert.Equal(t, 0, log.count(http.MethodPatch, crds), "and applies nothing")
	assert.Equal(t, 0, log.count(http.MethodGet, "/apis/apps"), "nor asks discovery")

	admin, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: g.CRD.Name}, crd))
	crd.Labels[v1alpha1.LabelManagedBy] = "someone-else"
	require.NoError(t, admin.Update(ctx, crd))
	err = f.Ensure(ctx, clusters[1], g, 0)
	require.ErrorIs(t, err, ErrConflict, "a CRD taken over since the shared check is refused")

	require.NoError(t, admin.Delete(ctx, crd))
	require.Eventually(t, func() bool {
		return apiextensionsNotFound(ctx, admin, g.CRD.Name)
	}, DefaultEstablishTimeout, DefaultPollInterval)
	log.reset()
	require.NoError(t, f.Ensure(ctx, clusters[2], g, 0), "a deleted CRD is put back")
	assert.Equal(t, 1, log.count(http.MethodPatch, crds))

	other := rest.CopyConfig(fleet.Hub.Config)
	other.Impersonate = rest.ImpersonationConfig{UserName: "other-admin", Groups: []string{"system:masters"}}
	log.reset()
	require.NoError(t, f.Ensure(ctx, sameServerClusters(t, other, 1, log)[0], g, 0))
	assert.Equal(t, 1, log.count(http.MethodPatch, crds), "another identity runs its own check")
}

func apiextensionsNotFound(ctx context.Context, c client.Client, name string) bool {
	err := c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
	return client.IgnoreNotFound(err) == nil && err != nil
}
