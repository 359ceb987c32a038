package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	rgdctrl "github.com/fleetgraph/fleetgraph/internal/rgd"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// fakeCompiles is a compiles whose compile returns err, counting calls,
// after asking the resolver (if any) for a ConfigMap's schema, and
// waiting for gate (if set).
func fakeCompiles(t *testing.T, err func() error, gate chan struct{}) (*compiles, *atomic.Int64, chan string) {
	t.Helper()
	ended := make(chan string, 8)
	c := newCompiles(context.Background(), time.Minute, func(name string) { ended <- name })
	var calls atomic.Int64
	c.compile = func(_ context.Context, rgd *v1alpha1.ResourceGraphDefinition, opts graph.Options) (*graph.Graph, error) {
		calls.Add(1)
		if opts.Resolver != nil {
			_, _ = opts.Resolver.ResolveSchema(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
		}
		if gate != nil {
			<-gate
		}
		if e := err(); e != nil {
			return nil, e
		}
		return &graph.Graph{Name: rgd.Name}, nil
	}
	return c, &calls, ended
}

func rgdNamed(name string, gen int64) *v1alpha1.ResourceGraphDefinition {
	return &v1alpha1.ResourceGraphDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: gen}}
}

var errBadRGD = &graph.Error{Path: "spec", Err: fmt.Errorf("%w: bad", graph.ErrInvalid)}

// A failure is reused while the spec and the resolver's answers hold; a
// compile without a resolver is not reused once there is one.
func TestCompilesReuseAFailureUntilSomethingChanges(t *testing.T) {
	c, calls, _ := fakeCompiles(t, func() error { return errBadRGD }, nil)
	ctx := context.Background()
	for range 3 {
		_, err := c.get(ctx, rgdNamed("a", 1), graph.Options{}, time.Minute)
		require.ErrorIs(t, err, graph.ErrInvalid)
	}
	assert.Equal(t, int64(1), calls.Load())

	res := graph.StaticResolver{{Version: "v1", Kind: "ConfigMap"}: &spec.Schema{}}
	_, err := c.get(ctx, rgdNamed("a", 1), graph.Options{Resolver: res}, time.Minute)
	require.ErrorIs(t, err, graph.ErrInvalid)
	assert.Equal(t, int64(2), calls.Load(), "compiled again now that kinds are typed")
	_, _ = c.get(ctx, rgdNamed("a", 1), graph.Options{Resolver: res}, time.Minute)
	assert.Equal(t, int64(2), calls.Load())

	res[schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}] = &spec.Schema{} // a new document
	_, _ = c.get(ctx, rgdNamed("a", 1), graph.Options{Resolver: res}, time.Minute)
	assert.Equal(t, int64(3), calls.Load(), "compiled again: the kind's schema changed")

	_, _ = c.get(ctx, rgdNamed("a", 2), graph.Options{Resolver: res}, time.Minute)
	assert.Equal(t, int64(4), calls.Load(), "compiled again: a new generation")
}

// What says nothing about the RGD is not remembered.
func TestCompilesForgetOutagesAndStops(t *testing.T) {
	for name, e := range map[string]error{
		"resolver outage": &graph.Error{Err: fmt.Errorf("%w: no answer", graph.ErrSchemaUnavailable)},
		"stopped":         fmt.Errorf("compiling stopped: %w", context.Canceled),
	} {
		t.Run(name, func(t *testing.T) {
			c, calls, _ := fakeCompiles(t, func() error { return e }, nil)
			for range 2 {
				_, err := c.get(context.Background(), rgdNamed("a", 1), graph.Options{}, time.Minute)
				require.Error(t, err)
			}
			assert.Equal(t, int64(2), calls.Load())
		})
	}
}

// A caller that stops waiting gets ErrCompiling; the compile goes on, is
// reported when it ends, and its result is then handed out without a
// second compile.
func TestCompilesThatOutlastTheirWaitAreReported(t *testing.T) {
	gate := make(chan struct{})
	c, calls, ended := fakeCompiles(t, func() error { return nil }, gate)
	_, err := c.get(context.Background(), rgdNamed("slow", 1), graph.Options{}, 10*time.Millisecond)
	require.ErrorIs(t, err, rgdctrl.ErrCompiling)
	_, err = c.get(context.Background(), rgdNamed("slow", 1), graph.Options{}, 10*time.Millisecond)
	require.ErrorIs(t, err, rgdctrl.ErrCompiling, "the running compile is waited for, not started again")
	close(gate)
	select {
	case name := <-ended:
		assert.Equal(t, "slow", name)
	case <-time.After(10 * time.Second):
		t.Fatal("the end of the compile was never reported")
	}
	g, err := c.get(context.Background(), rgdNamed("slow", 1), graph.Options{}, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "slow", g.Name)
	assert.Equal(t, int64(1), calls.Load())
	g2, _ := c.get(context.Background(), rgdNamed("slow", 1), graph.Options{}, time.Minute)
	assert.NotSame(t, g, g2, "each caller gets a graph of its own to number")
}

// A compile past its timeout refuses the RGD naming the option, and is
// remembered like any other failure of the spec: a caller that stopped
// waiting (the RGD controller waits a second) is told when it ends and
// then gets the refusal, without a second compile, until the spec changes.
func TestCompileTimeoutRefusesAndIsRemembered(t *testing.T) {
	c, calls, ended := fakeCompiles(t, func() error { return nil }, nil)
	c.timeout = 50 * time.Millisecond
	c.compile = func(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, _ graph.Options) (*graph.Graph, error) {
		calls.Add(1)
		<-ctx.Done()
		return nil, fmt.Errorf("compiling %q stopped: %w", rgd.Name, ctx.Err())
	}
	_, err := c.get(context.Background(), rgdNamed("slow", 1), graph.Options{}, time.Millisecond)
	require.ErrorIs(t, err, rgdctrl.ErrCompiling, "the caller stops waiting before the timeout")
	select {
	case name := <-ended:
		assert.Equal(t, "slow", name)
	case <-time.After(10 * time.Second):
		t.Fatal("the end of the timed-out compile was never reported")
	}
	for range 3 {
		_, err := c.get(context.Background(), rgdNamed("slow", 1), graph.Options{}, time.Millisecond)
		var ge *graph.Error
		require.True(t, errors.As(err, &ge), "the refusal, not ErrCompiling again: %v", err)
		assert.ErrorIs(t, err, graph.ErrLimit)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "the compile took longer than 50ms (Options.Compile.Timeout)")
	}
	assert.Equal(t, int64(1), calls.Load(), "a spec past the timeout is compiled once")

	_, err = c.get(context.Background(), rgdNamed("slow", 2), graph.Options{}, time.Minute)
	require.ErrorIs(t, err, graph.ErrLimit)
	assert.Equal(t, int64(2), calls.Load(), "a new generation is compiled again")
}

// A compile stopped because the Hub stops is not a refusal of the spec.
func TestCompilesStoppedWithTheHubAreNotRemembered(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, calls, _ := fakeCompiles(t, func() error { return nil }, nil)
	c.ctx = ctx
	c.compile = func(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, _ graph.Options) (*graph.Graph, error) {
		calls.Add(1)
		<-ctx.Done()
		return nil, fmt.Errorf("compiling %q stopped: %w", rgd.Name, ctx.Err())
	}
	cancel()
	_, err := c.get(context.Background(), rgdNamed("a", 1), graph.Options{}, time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, graph.ErrLimit)
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Empty(t, c.byName, "nothing remembered")
}

// slowAPIServer is a context-aware schema resolver whose document takes
// delay to come, once: then it is cached, as the default resolver's is.
// A lookup gives up when its context ends. Past failAfter lookups (when
// set), every lookup blocks until its context ends.
type slowAPIServer struct {
	delay     time.Duration
	fetched   atomic.Bool
	lookups   atomic.Int64
	failAfter int64
	fail      error
}

func (s *slowAPIServer) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	return s.ResolveSchemaContext(context.Background(), gvk)
}

func (s *slowAPIServer) ResolveSchemaContext(ctx context.Context, _ schema.GroupVersionKind) (*spec.Schema, error) {
	n := s.lookups.Add(1)
	if s.fail != nil {
		return nil, s.fail
	}
	if s.failAfter > 0 && n > s.failAfter {
		<-ctx.Done()
		return nil, fmt.Errorf("waiting for an OpenAPI v3 document: %w", ctx.Err())
	}
	if !s.fetched.Load() {
		select {
		case <-time.After(s.delay):
			s.fetched.Store(true)
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for an OpenAPI v3 document: %w", ctx.Err())
		}
	}
	return &spec.Schema{}, nil
}

// configMapRGD is an RGD with one ConfigMap child.
func configMapRGD(name string) *v1alpha1.ResourceGraphDefinition {
	rgd := rgdNamed(name, 1)
	rgd.Spec.Resources = []v1alpha1.Resource{{ID: "cm", Template: runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}}}
	return rgd
}

// lookupCompiles is a compiles with a short timeout whose compile asks its
// resolver for a ConfigMap and stops, as graph.CompileContext does, once
// its context ends.
func lookupCompiles(t *testing.T) (*compiles, *atomic.Int64) {
	t.Helper()
	c, calls, _ := fakeCompiles(t, func() error { return nil }, nil)
	c.timeout, c.schemaWait = 100*time.Millisecond, 10*time.Second
	c.compile = func(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, opts graph.Options) (*graph.Graph, error) {
		calls.Add(1)
		if _, err := opts.Resolver.ResolveSchema(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}); err != nil {
			return nil, &graph.Error{Path: "kind", Err: fmt.Errorf("%w: %w", graph.ErrSchemaUnavailable, err)}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("compiling %q stopped: %w", rgd.Name, ctx.Err())
		}
		return &graph.Graph{Name: rgd.Name}, nil
	}
	return c, calls
}

// The flake of issue 35: under load, the hub's API server answered the
// OpenAPI request of a compile slower than Compile.Timeout, and the compile
// ran past it (the lookup took no context), past Go's wait of
// Compile.Timeout + 1s too. A slow API server is no fault of the spec: the
// schemas are looked up before the compile's clock starts, and the
// registration waits for them.
func TestASlowAPIServerDoesNotTimeTheCompileOut(t *testing.T) {
	c, calls := lookupCompiles(t)
	res := &slowAPIServer{delay: 500 * time.Millisecond}
	g, err := c.get(context.Background(), configMapRGD("slow"), graph.Options{Resolver: res}, c.schemaWait+c.timeout+time.Second)
	require.NoError(t, err, "the lookup waited outside the compile's %s", c.timeout)
	assert.Equal(t, "slow", g.Name)
	assert.Equal(t, int64(1), calls.Load())
}

// A lookup that fails before the compile, or that still waits when the
// compile's clock runs out, says the schema was unavailable: not the
// spec's fault, not remembered, and compiled again at the next attempt.
func TestASchemaLookupThatFailsIsNotTheSpecsFault(t *testing.T) {
	t.Run("before the compile", func(t *testing.T) {
		c, calls := lookupCompiles(t)
		res := &slowAPIServer{fail: errors.New("the server is starting")}
		for range 2 {
			_, err := c.get(context.Background(), configMapRGD("a"), graph.Options{Resolver: res}, time.Minute)
			require.ErrorIs(t, err, graph.ErrSchemaUnavailable)
			assert.NotErrorIs(t, err, graph.ErrLimit)
		}
		assert.Zero(t, calls.Load(), "not compiled without its schemas")
		assert.Equal(t, int64(2), res.lookups.Load(), "asked again: not remembered")
	})
	t.Run("during the compile", func(t *testing.T) {
		c, calls := lookupCompiles(t)
		res := &slowAPIServer{failAfter: 1}
		start := time.Now()
		_, err := c.get(context.Background(), configMapRGD("a"), graph.Options{Resolver: res}, time.Minute)
		require.ErrorIs(t, err, graph.ErrSchemaUnavailable)
		assert.NotErrorIs(t, err, graph.ErrLimit, "a lookup that outlasts the compile is no limit of the spec")
		assert.Less(t, time.Since(start), 5*time.Second, "the lookup ended with the compile's context")
		_, err = c.get(context.Background(), configMapRGD("a"), graph.Options{Resolver: &slowAPIServer{}}, time.Minute)
		require.NoError(t, err, "the server answers again")
		assert.Equal(t, int64(2), calls.Load(), "compiled again: not remembered")
	})
}
