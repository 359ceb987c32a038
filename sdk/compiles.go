package sdk

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"k8s.io/apimachinery/pkg/runtime/schema"
	celresolver "k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"

	rgdctrl "github.com/fleetgraph/fleetgraph/internal/rgd"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// DefaultCompileTimeout is Options.Compile.Timeout's default.
const DefaultCompileTimeout = 30 * time.Second

// rgdCompileWait is how long the RGD controller waits for a compile before
// it moves on to other RGDs; the compile goes on, and the RGD is
// reconciled again when it ends.
const rgdCompileWait = time.Second

// compiles runs the Hub's compiles of its graphs: each in a goroutine of
// its own, outside any lock, at most one at a time per graph name and
// spec, and remembered. An RGD whose compile failed is not compiled again
// until its spec changes, or what the compile saw of the hub's schemas
// does: a tenant's bad RGD costs one compile, not one per status resync.
// Failures that say nothing about the RGD (the schema resolver did not
// answer, the compile was stopped) are not remembered. Safe for
// concurrent use.
type compiles struct {
	// compile is graph.CompileContext.
	compile func(context.Context, *v1alpha1.ResourceGraphDefinition, graph.Options) (*graph.Graph, error)
	// ctx ends every compile (the Hub stops); each has timeout besides.
	ctx     context.Context
	timeout time.Duration
	// schemaWait bounds the lookups of a spec's kinds before its compile
	// (compile_schemas.go).
	schemaWait time.Duration
	// ended is told the name of a graph whose compile ended after a
	// caller stopped waiting for it.
	ended func(name string)

	mu     sync.Mutex
	byName map[string]*compileRun
	// runs counts the compiles started; reuses the remembered results
	// handed out.
	runs, reuses atomic.Int64
}

// compileRun is one compile of one spec of a graph.
type compileRun struct {
	key  [sha256.Size]byte
	done chan struct{}
	// Set before done is closed.
	graph *graph.Graph
	err   error
	seen  *seenSchemas
	// abandoned: a caller stopped waiting; ended is told at the end.
	abandoned atomic.Bool
}

func newCompiles(ctx context.Context, timeout time.Duration, ended func(string)) *compiles {
	return &compiles{compile: graph.CompileContext, ctx: ctx, timeout: timeout, schemaWait: schemaWait, ended: ended, byName: map[string]*compileRun{}}
}

// get returns the graph compiled from rgd with opts (a copy of its own,
// which the caller may number), compiling it unless the same spec's
// compile is remembered (or running). It waits until the compile ends, ctx
// is done, or wait has passed; in the last two cases c.ended is told rgd's
// name when the compile ends, and after wait the error wraps
// rgdctrl.ErrCompiling.
func (c *compiles) get(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, opts graph.Options, wait time.Duration) (*graph.Graph, error) {
	key, err := compileKey(rgd)
	if err != nil {
		return nil, err
	}
	run := c.lookup(rgd.Name, key, opts.Resolver)
	if run == nil {
		run = c.start(ctx, rgd, key, opts)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-run.done:
		return run.result()
	case <-ctx.Done():
		if g, err, ok := run.abandon(); ok {
			return g, err
		}
		return nil, fmt.Errorf("compiling graph %s: %w", rgd.Name, context.Cause(ctx))
	case <-t.C:
		if g, err, ok := run.abandon(); ok {
			return g, err
		}
		return nil, fmt.Errorf("%w: graph %s, for %v so far", rgdctrl.ErrCompiling, rgd.Name, wait)
	}
}

// result is the run's graph, a copy for the caller, or its error.
func (run *compileRun) result() (*graph.Graph, error) {
	if run.err != nil {
		return nil, run.err
	}
	g := *run.graph
	return &g, nil
}

// abandon marks the run as no longer waited for, unless it has ended
// meanwhile: then it returns the result. (The run checks the mark after
// it ends, so one of the two sees the other.)
func (run *compileRun) abandon() (*graph.Graph, error, bool) {
	run.abandoned.Store(true)
	select {
	case <-run.done:
		g, err := run.result()
		return g, err, true
	default:
		return nil, nil, false
	}
}

// lookup returns the run of this spec of the named graph, running or
// ended, unless it ended with what the resolver answered then no longer
// being what it answers now.
func (c *compiles) lookup(name string, key [sha256.Size]byte, r graph.SchemaResolver) *compileRun {
	c.mu.Lock()
	run := c.byName[name]
	c.mu.Unlock()
	if run == nil || run.key != key {
		return nil
	}
	select {
	case <-run.done:
		if !run.seen.unchanged(r) {
			return nil
		}
		c.reuses.Add(1)
	default:
	}
	return run
}

// start compiles rgd in a goroutine of its own, as the named graph's
// current run.
func (c *compiles) start(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition, key [sha256.Size]byte, opts graph.Options) *compileRun {
	run := &compileRun{key: key, done: make(chan struct{}), seen: &seenSchemas{}}
	c.mu.Lock()
	c.byName[rgd.Name] = run
	c.mu.Unlock()
	c.runs.Add(1)
	resolver := opts.Resolver
	rgd = rgd.DeepCopy()
	// The compile outlives the caller's wait: it ends with the Hub, or at
	// its timeout, not with the caller's context. Its schemas are looked
	// up first, outside its timeout (compile_schemas.go).
	go func() {
		sctx, stop := context.WithTimeout(c.ctx, c.schemaWait)
		run.err = warmSchemas(sctx, rgd, resolver)
		stop()
		if run.err == nil {
			cctx, cancel := context.WithTimeout(c.ctx, c.timeout)
			opts.Resolver = run.seen.recording(bindResolver(cctx, resolver))
			run.graph, run.err = c.compile(cctx, rgd, opts)
			if run.err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && c.ctx.Err() == nil &&
				!errors.Is(run.err, graph.ErrSchemaUnavailable) {
				run.err = c.timedOut(run.err)
			}
			cancel()
		}
		if !rememberable(run.err) {
			c.forget(rgd.Name, run)
		}
		close(run.done)
		if run.abandoned.Load() && c.ended != nil {
			c.ended(rgd.Name)
		}
	}()
	return run
}

// timedOut is the error of a compile stopped by its Compile.Timeout. It
// says something about the RGD, as any other limit does: it is remembered
// (it does not wrap context.DeadlineExceeded), so that a spec that takes
// longer than the timeout costs one compile, not one every time its RGD is
// reconciled, and its RGD shows why it is refused.
func (c *compiles) timedOut(err error) error {
	return &graph.Error{Path: "spec", Err: fmt.Errorf("%w: the compile took longer than %v (Options.Compile.Timeout); it is compiled again when the RGD's spec changes (%v)",
		graph.ErrLimit, c.timeout, err)}
}

// rememberable tells a result that says something about the RGD from one
// that does not: the resolver did not answer, or the compile was stopped
// (the Hub is stopping). A compile past Compile.Timeout is remembered
// (timedOut).
func rememberable(err error) bool {
	var ge *graph.Error
	return err == nil || (errors.As(err, &ge) && !errors.Is(err, graph.ErrSchemaUnavailable) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled))
}

// forget drops the named graph's run, if it is still run: the graph was
// removed, or the run's result is not to be reused.
func (c *compiles) forget(name string, run *compileRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.byName[name]; cur != nil && (run == nil || cur == run) {
		delete(c.byName, name)
	}
}

// compileKey identifies what a compile of rgd depends on besides the
// Hub's options and schemas: its name, generation and spec.
func compileKey(rgd *v1alpha1.ResourceGraphDefinition) ([sha256.Size]byte, error) {
	raw, err := json.Marshal(struct {
		Name       string
		Generation int64
		Spec       *v1alpha1.ResourceGraphDefinitionSpec
	}{rgd.Name, rgd.Generation, &rgd.Spec})
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("hashing the spec of graph %s: %w", rgd.Name, err)
	}
	return sha256.Sum256(raw), nil
}

// seenSchemas records what a schema resolver answered during one compile,
// so that the compile's result is reused only while it answers the same.
// A resolver that keeps a document cached returns the same schema pointer
// for a kind (resolver.Resolver does), so a changed pointer, a kind found
// that was not, or a different scope, means the compile may differ. Weak
// pointers keep no schema alive, and never compare equal to a new one.
type seenSchemas struct {
	// resolved: the compile had a resolver (a graph registered before
	// SetupWithManager has none).
	resolved bool

	mu      sync.Mutex
	schemas map[schema.GroupVersionKind]weak.Pointer[spec.Schema]
	missing map[schema.GroupVersionKind]bool
	scopes  map[schema.GroupVersionKind]bool
}

// recording wraps r so that its answers are recorded; nil stays nil.
func (s *seenSchemas) recording(r graph.SchemaResolver) graph.SchemaResolver {
	if r == nil {
		return nil
	}
	s.resolved = true
	rec := recordingResolver{inner: r, seen: s}
	if sr, ok := r.(graph.ScopeResolver); ok {
		return scopedRecordingResolver{recordingResolver: rec, scopes: sr}
	}
	return rec
}

func (s *seenSchemas) record(gvk schema.GroupVersionKind, sch *spec.Schema, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil && sch != nil:
		if s.schemas == nil {
			s.schemas = map[schema.GroupVersionKind]weak.Pointer[spec.Schema]{}
		}
		s.schemas[gvk] = weak.Make(sch)
	case err == nil || errors.Is(err, graph.ErrSchemaNotFound) || errors.Is(err, celresolver.ErrSchemaNotFound):
		if s.missing == nil {
			s.missing = map[schema.GroupVersionKind]bool{}
		}
		s.missing[gvk] = true
	}
}

// unchanged reports whether r answers now what it answered during the
// compile. Asking it again is cheap: resolvers cache their documents.
func (s *seenSchemas) unchanged(r graph.SchemaResolver) bool {
	// Only called once the compile has ended: nothing records any more.
	if (r != nil) != s.resolved {
		return false
	}
	for gvk, was := range s.schemas {
		if now, err := r.ResolveSchema(gvk); err != nil || now == nil || weak.Make(now) != was {
			return false
		}
	}
	for gvk := range s.missing {
		if now, err := r.ResolveSchema(gvk); err == nil && now != nil {
			return false
		}
	}
	sr, _ := r.(graph.ScopeResolver)
	for gvk, was := range s.scopes {
		if sr == nil {
			return false
		}
		if now, err := sr.IsNamespaced(gvk); err != nil || now != was {
			return false
		}
	}
	return true
}

type recordingResolver struct {
	inner graph.SchemaResolver
	seen  *seenSchemas
}

func (r recordingResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	s, err := r.inner.ResolveSchema(gvk)
	r.seen.record(gvk, s, err)
	return s, err
}

// scopedRecordingResolver is a recordingResolver for a resolver that also
// tells scopes; the compile checks scopes only when it has one.
type scopedRecordingResolver struct {
	recordingResolver
	scopes graph.ScopeResolver
}

func (r scopedRecordingResolver) IsNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	namespaced, err := r.scopes.IsNamespaced(gvk)
	if err == nil {
		r.seen.mu.Lock()
		if r.seen.scopes == nil {
			r.seen.scopes = map[schema.GroupVersionKind]bool{}
		}
		r.seen.scopes[gvk] = namespaced
		r.seen.mu.Unlock()
	}
	return namespaced, err
}

var (
	_ graph.SchemaResolver = recordingResolver{}
	_ graph.ScopeResolver  = scopedRecordingResolver{}
)
