//go:build integration

package spoke_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
)

// secretRefRGD reads one Secret by name and copies a value from it.
const secretRefRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: secretref
spec:
  schema:
    apiVersion: v1alpha1
    kind: SecretRef
    spec:
      unused: string | default="x"
  resources:
  - id: creds
    externalRef:
      apiVersion: v1
      kind: Secret
      metadata:
        name: creds
  - id: copy
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-copy
      data:
        user: ${string(creds.data.user)} # base64, as Secret data is
`

// requestLog records the URLs of the requests one client sends.
type requestLog struct {
	next http.RoundTripper
	mu   sync.Mutex
	urls []string
}

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.urls = append(l.urls, r.Method+" "+r.URL.RequestURI())
	l.mu.Unlock()
	return l.next.RoundTrip(r)
}

func (l *requestLog) matching(part string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, u := range l.urls {
		if strings.Contains(u, part) {
			out = append(out, u)
		}
	}
	return out
}

func TestAnExternalRefWatchesOnlyWhatItNames(t *testing.T) {
	t.Parallel()
	const ns = "secretref"
	g := compile(t, secretRefRGD)
	cfg := rest.CopyConfig(sharedFleet(t).Spokes()[0].Config)
	c := newClient(t, cfg)
	installCRD(t, c, g)
	createNamespace(t, c, ns)
	ctx, cancel := context.WithCancel(context.Background())
	for _, name := range []string{"creds", "other"} {
		s := &unstructured.Unstructured{Object: map[string]any{"stringData": map[string]any{"user": name}}}
		s.SetAPIVersion("v1")
		s.SetKind("Secret")
		s.SetNamespace(ns)
		s.SetName(name)
		require.NoError(t, c.Create(ctx, s))
	}

	log := &requestLog{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log }
	cl, err := cluster.New(cfg)
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = cl.Start(ctx) })
	require.True(t, cl.GetCache().WaitForCacheSync(ctx))
	rt := spoke.New(spoke.Config{})
	wg.Go(func() { _ = rt.Start(ctx) })
	require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
	require.NoError(t, rt.Engage(ctx, "", cl))

	require.NoError(t, c.Create(ctx, newInstance(g, ns, "app", map[string]any{})))
	stateIs(t, c, g, ns, "app", contract.StateActive)
	configMapData(t, c, ns, "app-copy", "user", base64.StdEncoding.EncodeToString([]byte("creds")))

	t.Run("a change to the referenced Secret still propagates", func(t *testing.T) {
		require.NoError(t, c.Patch(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"namespace": ns, "name": "creds"}}},
			client.RawPatch(types.MergePatchType, []byte(`{"stringData":{"user":"rotated"}}`))))
		configMapData(t, c, ns, "app-copy", "user", base64.StdEncoding.EncodeToString([]byte("rotated")))
	})

	requests := log.matching("secrets")
	require.NotEmpty(t, requests, "the Secret is read from the API server")
	for _, r := range requests {
		assert.Contains(t, r, "fieldSelector=metadata.name%3Dcreds", "every Secret request is scoped to the one named")
	}
}
