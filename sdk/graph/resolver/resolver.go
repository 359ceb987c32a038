package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	celresolver "k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

const (
	// DefaultTTL is how long a group-version's schemas are reused by default.
	DefaultTTL = 10 * time.Minute
	// DefaultRefetchAfterMiss is how old a cached document must be before a
	// kind missing from it causes a refetch, by default.
	DefaultRefetchAfterMiss = 5 * time.Second
	// DefaultRetryFor bounds, by default, how long a server error is retried.
	DefaultRetryFor = 10 * time.Second
)

// Options tune a Resolver. The zero value is valid.
type Options struct {
	// TTL is how long a group-version's OpenAPI document is reused before it
	// is fetched again. Defaults to DefaultTTL.
	TTL time.Duration
	// RefetchAfterMiss: when a kind is not in a cached document at least
	// this old, the document is fetched again (a CRD may just have been
	// installed). Defaults to DefaultRefetchAfterMiss.
	RefetchAfterMiss time.Duration
	// RetryFor is how long a document is asked for again while the server
	// answers with a server error (5xx or 429). Defaults to
	// DefaultRetryFor; negative turns retries off.
	RetryFor time.Duration
	// Now tells the time. Defaults to time.Now; tests set it.
	Now func() time.Time
}

func (o *Options) setDefaults() {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.RefetchAfterMiss <= 0 {
		o.RefetchAfterMiss = DefaultRefetchAfterMiss
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RetryFor == 0 {
		o.RetryFor = DefaultRetryFor
	}
}

// Resolver is a graph.SchemaResolver reading OpenAPI v3 through discovery,
// with a cache per group-version. It is safe for concurrent use. A schema it
// returns is shared and must not be modified; the same kind resolves to the
// same pointer while its document is cached, which lets graph.Compile reuse
// the CEL types it derived from it.
//
// No lock is held while a document is fetched or a server error is waited
// out: a slow or failing group-version delays only the callers that need
// it, and concurrent callers that need the same one share a single fetch.
// A caller with a context (ResolveSchemaContext, Bound) waits for a fetch
// no longer than its context allows, even the fetch it started.
type Resolver struct {
	client openapi.Client
	opts   Options

	mu           sync.Mutex
	paths        map[string]openapi.GroupVersion
	pathsFetched time.Time
	docs         map[schema.GroupVersion]*document
	fetching     map[schema.GroupVersion]*fetchCall
	// generation counts Resets: a fetch started before one is not cached.
	generation int
}

// fetchCall is one fetch of a group-version's document, which every caller
// that needs it meanwhile waits for.
type fetchCall struct {
	done chan struct{}
	doc  *document
	err  error

	// Under Resolver.mu: the callers waiting, the last of which to give
	// up before done stops the retries; and the last server error
	// retried, which says why a caller that gave up waited.
	waiters int
	stop    context.CancelFunc
	retried error
}

var (
	_ graph.SchemaResolver = (*Resolver)(nil)
	_ graph.ScopeResolver  = (*Resolver)(nil)
	_ graph.SchemaResolver = Bound{}
	_ graph.ScopeResolver  = Bound{}
)

// New returns a Resolver reading from client, e.g.
// discoveryClient.OpenAPIV3().
func New(client openapi.Client, opts Options) *Resolver {
	opts.setDefaults()
	return &Resolver{client: client, opts: opts, docs: map[schema.GroupVersion]*document{},
		fetching: map[schema.GroupVersion]*fetchCall{}}
}

// NewForConfig returns a Resolver for the cluster cfg reaches.
func NewForConfig(cfg *rest.Config, opts Options) (*Resolver, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	return New(dc.OpenAPIV3(), opts), nil
}

// Reset forgets every cached document. A fetch under way when Reset is
// called still answers its callers but is not cached.
func (r *Resolver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths = nil
	clear(r.docs)
	r.generation++
}

// Bound is a Resolver whose lookups are bounded by one context: give it
// to graph.Compile (Options.Resolver) to stop a compile's waits on the API
// server when its context ends. Make one with Resolver.WithContext.
type Bound struct {
	r   *Resolver
	ctx context.Context
}

// WithContext returns r bounded by ctx, sharing r's cache.
func (r *Resolver) WithContext(ctx context.Context) Bound { return Bound{r: r, ctx: ctx} }

// ResolveSchema implements graph.SchemaResolver: ResolveSchemaContext with
// the Bound's context.
func (b Bound) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	return b.r.ResolveSchemaContext(b.ctx, gvk)
}

// IsNamespaced implements graph.ScopeResolver: IsNamespacedContext with the
// Bound's context.
func (b Bound) IsNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	return b.r.IsNamespacedContext(b.ctx, gvk)
}

// ResolveSchema implements graph.SchemaResolver. It is ResolveSchemaContext
// with a context that never ends: a server error is retried for at most
// Options.RetryFor.
func (r *Resolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	return r.ResolveSchemaContext(context.Background(), gvk)
}

// ResolveSchemaContext returns gvk's schema with every $ref resolved. An
// unknown group-version or kind gives an error wrapping
// graph.ErrSchemaNotFound. When ctx ends while it waits for the server
// (a fetch of another caller, or the pause between retries of a server
// error), it returns an error wrapping ctx.Err().
func (r *Resolver) ResolveSchemaContext(ctx context.Context, gvk schema.GroupVersionKind) (*spec.Schema, error) {
	gv := gvk.GroupVersion()
	doc, err := r.document(ctx, gv, false)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	_, known := doc.refs[gvk]
	r.mu.Unlock()
	if !known && r.opts.Now().Sub(doc.fetched) >= r.opts.RefetchAfterMiss {
		if doc, err = r.document(ctx, gv, true); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return doc.resolve(gvk)
}

// IsNamespaced implements graph.ScopeResolver. It is IsNamespacedContext
// with a context that never ends.
func (r *Resolver) IsNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	return r.IsNamespacedContext(context.Background(), gvk)
}

// IsNamespacedContext reports, from the same documents, whether gvk's
// objects live in a namespace: a kind is namespaced when the API server
// serves it under a path with a {namespace} parameter. An unknown kind
// gives an error wrapping graph.ErrSchemaNotFound; ctx bounds the waits as
// in ResolveSchemaContext.
func (r *Resolver) IsNamespacedContext(ctx context.Context, gvk schema.GroupVersionKind) (bool, error) {
	if _, err := r.ResolveSchemaContext(ctx, gvk); err != nil {
		return false, err
	}
	doc, err := r.document(ctx, gvk.GroupVersion(), false)
	if err != nil {
		return false, err
	}
	namespaced, ok := doc.namespaced[gvk]
	if !ok {
		return false, fmt.Errorf("%w: the API server serves no path for kind %s", graph.ErrSchemaNotFound, gvk)
	}
	return namespaced, nil
}

// document returns gv's cached document, fetching it when absent, expired
// or when refetch is set. A fetch of gv already under way is waited for
// instead of starting another; none is made with r.mu held.
func (r *Resolver) document(ctx context.Context, gv schema.GroupVersion, refetch bool) (*document, error) {
	for {
		r.mu.Lock()
		if doc, ok := r.docs[gv]; ok && !refetch && r.opts.Now().Sub(doc.fetched) < r.opts.TTL {
			r.mu.Unlock()
			return doc, nil
		}
		call, ok := r.fetching[gv]
		if !ok {
			// The fetch runs on its own and every caller, this one
			// included, waits for it as long as its own context allows: a
			// request to an API server that takes long (the OpenAPI
			// client's calls take no context) holds no caller past its
			// context. Its retries end with the last caller waiting, its
			// request with the client's timeout, and a document it gets
			// is cached for whoever asks next.
			fetchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
			call = &fetchCall{done: make(chan struct{}), stop: stop}
			r.fetching[gv] = call
			go r.fetchFor(fetchCtx, gv, refetch, call, r.generation)
		}
		call.waiters++
		r.mu.Unlock()
		doc, err := r.wait(ctx, call)
		if err != nil && ctx.Err() == nil && isContextError(err) {
			continue // the fetch stopped when every other caller gave up; this one has not
		}
		return doc, err
	}
}

// fetchFor fetches gv's document for call, caches it unless a Reset came
// meanwhile, and hands it to every caller waiting on call.
func (r *Resolver) fetchFor(ctx context.Context, gv schema.GroupVersion, refetch bool, call *fetchCall, generation int) {
	defer call.stop()
	now := r.opts.Now()
	doc, err := r.fetchRetrying(ctx, gv, refetch, call)
	r.mu.Lock()
	if err == nil {
		doc.fetched = now
		if r.generation == generation {
			r.docs[gv] = doc
		}
	}
	if r.fetching[gv] == call {
		delete(r.fetching, gv)
	}
	r.mu.Unlock()
	call.doc, call.err = doc, err
	close(call.done)
}

// wait waits for call's fetch, or for ctx to end; the last caller to
// give up stops the fetch's retries.
func (r *Resolver) wait(ctx context.Context, call *fetchCall) (*document, error) {
	select {
	case <-call.done:
		return call.doc, call.err
	case <-ctx.Done():
		r.mu.Lock()
		if call.waiters--; call.waiters == 0 {
			call.stop()
		}
		retried := call.retried
		r.mu.Unlock()
		if retried != nil {
			return nil, fmt.Errorf("waiting for an OpenAPI v3 document: %w (retrying after: %w)", ctx.Err(), retried)
		}
		return nil, fmt.Errorf("waiting for an OpenAPI v3 document: %w", ctx.Err())
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// fetchRetrying is fetch, asked again with a fresh path list while the
// server answers with a server error, for at most Options.RetryFor or until
// ctx ends. Right after a CRD is installed some servers fail OpenAPI
// requests for a moment (kcp v0.30.0 answers 500, "CRD ... not found"), and
// a compile must not fail for that. Called without r.mu.
func (r *Resolver) fetchRetrying(ctx context.Context, gv schema.GroupVersion, refreshPaths bool, call *fetchCall) (*document, error) {
	deadline := time.Now().Add(r.opts.RetryFor)
	delay := 50 * time.Millisecond
	for {
		doc, err := r.fetch(gv, refreshPaths)
		if err == nil || !transient(err) || time.Now().Add(delay).After(deadline) {
			return doc, err
		}
		r.mu.Lock()
		call.retried = err
		r.mu.Unlock()
		pause := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			pause.Stop()
			return nil, fmt.Errorf("%w (retrying after: %w)", ctx.Err(), err)
		case <-pause.C:
		}
		delay = min(2*delay, time.Second)
		refreshPaths = true
	}
}

// transient reports whether err is a server error worth asking again.
func transient(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code >= http.StatusInternalServerError || code == http.StatusTooManyRequests
}

// fetch fetches gv's document, and the path list first when it is missing,
// stale for a group-version it lacks, or refreshPaths is set. Called
// without r.mu.
func (r *Resolver) fetch(gv schema.GroupVersion, refreshPaths bool) (*document, error) {
	r.mu.Lock()
	c, ok := r.paths[pathOf(gv)]
	stale := r.opts.Now().Sub(r.pathsFetched) >= r.opts.RefetchAfterMiss
	needPaths := r.paths == nil || refreshPaths || (!ok && stale)
	r.mu.Unlock()
	if needPaths {
		paths, err := r.fetchPaths()
		if err != nil {
			return nil, err
		}
		c, ok = paths[pathOf(gv)]
	}
	if !ok {
		return nil, fmt.Errorf("%w: the API server does not serve %s", graph.ErrSchemaNotFound, gv)
	}
	raw, err := c.Schema(runtime.ContentTypeJSON)
	if err != nil {
		return nil, fmt.Errorf("fetching the OpenAPI v3 document of %s: %w", gv, err)
	}
	return parseDocument(raw)
}

// fetchPaths lists the group-versions the server documents and keeps the
// list. Called without r.mu.
func (r *Resolver) fetchPaths() (map[string]openapi.GroupVersion, error) {
	paths, err := r.client.Paths()
	if err != nil {
		return nil, fmt.Errorf("listing OpenAPI v3 paths: %w", err)
	}
	r.mu.Lock()
	r.paths, r.pathsFetched = paths, r.opts.Now()
	r.mu.Unlock()
	return paths, nil
}

func pathOf(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

const refPrefix = "#/components/schemas/"

// document is one group-version's OpenAPI v3 document.
type document struct {
	fetched    time.Time
	components map[string]*spec.Schema
	refs       map[schema.GroupVersionKind]string
	resolved   map[schema.GroupVersionKind]*spec.Schema
	// namespaced tells, for each kind served under some path, whether one
	// of those paths has a {namespace} parameter.
	namespaced map[schema.GroupVersionKind]bool
}

func parseDocument(raw []byte) (*document, error) {
	var body struct {
		Components struct {
			Schemas map[string]*spec.Schema `json:"schemas"`
		} `json:"components"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("decoding an OpenAPI v3 document: %w", err)
	}
	doc := &document{
		components: body.Components.Schemas,
		refs:       map[schema.GroupVersionKind]string{},
		resolved:   map[schema.GroupVersionKind]*spec.Schema{},
		namespaced: scopes(body.Paths),
	}
	for name, s := range doc.components {
		var gvks []schema.GroupVersionKind
		if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil {
			continue
		}
		for _, gvk := range gvks {
			doc.refs[gvk] = name
		}
	}
	return doc, nil
}

// scopes reads the kinds' scopes from a document's paths.
func scopes(paths map[string]map[string]json.RawMessage) map[schema.GroupVersionKind]bool {
	out := map[schema.GroupVersionKind]bool{}
	for path, ops := range paths {
		inNamespace := strings.Contains(path, "{namespace}")
		for _, raw := range ops {
			var op struct {
				GVK *schema.GroupVersionKind `json:"x-kubernetes-group-version-kind"`
			}
			if json.Unmarshal(raw, &op) != nil || op.GVK == nil {
				continue
			}
			out[*op.GVK] = out[*op.GVK] || inNamespace
		}
	}
	return out
}

func (d *document) resolve(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if s, ok := d.resolved[gvk]; ok {
		return s, nil
	}
	name, ok := d.refs[gvk]
	if !ok {
		return nil, fmt.Errorf("%w: the API server does not serve kind %s", graph.ErrSchemaNotFound, gvk)
	}
	s, err := celresolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		s, ok := d.components[strings.TrimPrefix(ref, refPrefix)]
		return s, ok
	}, refPrefix+name)
	if err != nil {
		return nil, fmt.Errorf("resolving references in the schema of %s: %w", gvk, err)
	}
	d.resolved[gvk] = s
	return s, nil
}
