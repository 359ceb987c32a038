package resolver_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

// settle bounds how long a call that must not block may take to return; it
// only keeps a regression from hanging the test.
const settle = 10 * time.Second

var gizmoGVK = schema.GroupVersionKind{Group: "other.example.com", Version: "v1", Kind: "Gizmo"}

const gizmoDoc = `{"components": {"schemas": {"com.example.other.v1.Gizmo": {"type": "object",
  "x-kubernetes-group-version-kind": [{"group": "other.example.com", "version": "v1", "kind": "Gizmo"}]}}}}`

// gatedGV serves one group-version's document and holds every fetch until
// the gate opens, saying on entered when a fetch has begun.
type gatedGV struct {
	doc     []byte
	entered chan struct{}
	gate    chan struct{}
	open    sync.Once
}

func newGatedGV(t *testing.T, doc string) *gatedGV {
	g := &gatedGV{doc: []byte(doc), entered: make(chan struct{}, 16), gate: make(chan struct{})}
	t.Cleanup(g.release)
	return g
}

func (g *gatedGV) Schema(string) ([]byte, error) {
	g.entered <- struct{}{}
	<-g.gate
	return g.doc, nil
}

func (g *gatedGV) ServerRelativeURL() string { return "/openapi/v3/apis/example.com/v1" }

func (g *gatedGV) release() { g.open.Do(func() { close(g.gate) }) }

// servedPaths is an openapi.Client serving a fixed path list.
type servedPaths map[string]openapi.GroupVersion

func (p servedPaths) Paths() (map[string]openapi.GroupVersion, error) { return p, nil }

// result is what a ResolveSchema call in a goroutine returned.
type result struct {
	schema *spec.Schema
	err    error
}

func resolveAsync(ctx context.Context, r *resolver.Resolver, gvk schema.GroupVersionKind) <-chan result {
	out := make(chan result, 1)
	go func() {
		s, err := r.ResolveSchemaContext(ctx, gvk)
		out <- result{s, err}
	}()
	return out
}

func requireResult(t *testing.T, ch <-chan result, msg string) result {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(settle):
		require.FailNow(t, "still waiting: "+msg)
		return result{}
	}
}

// A fetch the server is slow to answer holds no lock: kinds of other
// group-versions resolve meanwhile. A second caller for the same
// group-version waits for the fetch under way instead of starting its
// own, and stops waiting when its context ends.
func TestASlowFetchDelaysOnlyItsGroupVersion(t *testing.T) {
	widgets := newGatedGV(t, widgetDoc)
	gizmos := &countingClient{}
	gizmos.set(gizmoDoc)
	r := resolver.New(servedPaths{"apis/example.com/v1": widgets, "apis/other.example.com/v1": gizmos}, resolver.Options{})

	first := resolveAsync(context.Background(), r, widgetGVK)
	<-widgets.entered

	got := requireResult(t, resolveAsync(context.Background(), r, gizmoGVK), "another group-version waits for a slow fetch")
	require.NoError(t, got.err)

	ctx, cancel := context.WithCancel(context.Background())
	second := resolveAsync(ctx, r, widgetGVK)
	cancel()
	got = requireResult(t, second, "a cancelled caller still waits for another's fetch")
	require.ErrorIs(t, got.err, context.Canceled)
	assert.Empty(t, widgets.entered, "the second caller started no fetch of its own")

	widgets.release()
	firstGot := requireResult(t, first, "the fetch ends once the server answers")
	require.NoError(t, firstGot.err)
	again, err := r.ResolveSchema(widgetGVK)
	require.NoError(t, err)
	assert.Same(t, firstGot.schema, again, "the fetched document was cached")
}

// The pause between retries of a server error ends with the caller's
// context, long before Options.RetryFor.
func TestAContextEndsTheRetriesOfAServerError(t *testing.T) {
	c := &countingClient{fail: apierrors.NewServiceUnavailable("starting"), failures: 1 << 30}
	c.set(widgetDoc)
	r := resolver.New(c, resolver.Options{RetryFor: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() {
		s, err := r.WithContext(ctx).ResolveSchema(widgetGVK)
		done <- result{s, err}
	}()
	require.Eventually(t, func() bool { return c.fetchCount() >= 2 }, settle, time.Millisecond, "retried")
	cancel()
	got := requireResult(t, done, "a cancelled caller still retries")
	require.ErrorIs(t, got.err, context.Canceled)
	assert.True(t, apierrors.IsServiceUnavailable(got.err), "the error says what was retried: %v", got.err)

	c.mu.Lock()
	c.failures = 0
	c.mu.Unlock()
	_, err := r.ResolveSchema(widgetGVK)
	require.NoError(t, err, "a cancelled fetch leaves nothing behind that blocks the next")
}
