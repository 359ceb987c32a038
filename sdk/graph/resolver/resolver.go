package resolver

import (
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
type Resolver struct {
	client openapi.Client
	opts   Options

	mu           sync.Mutex
	paths        map[string]openapi.GroupVersion
	pathsFetched time.Time
	docs         map[schema.GroupVersion]*document
}

var (
	_ graph.SchemaResolver = (*Resolver)(nil)
	_ graph.ScopeResolver  = (*Resolver)(nil)
)

// New returns a Resolver reading from client, e.g.
// discoveryClient.OpenAPIV3().
func New(client openapi.Client, opts Options) *Resolver {
	opts.setDefaults()
	return &Resolver{client: client, opts: opts, docs: map[schema.GroupVersion]*document{}}
}

// NewForConfig returns a Resolver for the cluster cfg reaches.
func NewForConfig(cfg *rest.Config, opts Options) (*Resolver, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	return New(dc.OpenAPIV3(), opts), nil
}

// Reset forgets every cached document.
func (r *Resolver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths = nil
	clear(r.docs)
}

// ResolveSchema implements graph.SchemaResolver. An unknown group-version
// or kind gives an error wrapping graph.ErrSchemaNotFound.
func (r *Resolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	gv := gvk.GroupVersion()
	doc, err := r.document(gv, false)
	if err != nil {
		return nil, err
	}
	if _, ok := doc.refs[gvk]; !ok && r.opts.Now().Sub(doc.fetched) >= r.opts.RefetchAfterMiss {
		if doc, err = r.document(gv, true); err != nil {
			return nil, err
		}
	}
	return doc.resolve(gvk)
}

// IsNamespaced implements graph.ScopeResolver from the same documents: a
// kind is namespaced when the API server serves it under a path with a
// {namespace} parameter. An unknown kind gives an error wrapping
// graph.ErrSchemaNotFound.
func (r *Resolver) IsNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	if _, err := r.ResolveSchema(gvk); err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	doc, err := r.document(gvk.GroupVersion(), false)
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
// or when refetch is set. Called with r.mu held.
func (r *Resolver) document(gv schema.GroupVersion, refetch bool) (*document, error) {
	now := r.opts.Now()
	if doc, ok := r.docs[gv]; ok && !refetch && now.Sub(doc.fetched) < r.opts.TTL {
		return doc, nil
	}
	doc, err := r.fetchRetrying(gv, refetch)
	if err != nil {
		return nil, err
	}
	doc.fetched = now
	r.docs[gv] = doc
	return doc, nil
}

// fetchRetrying is fetch, asked again with a fresh path list while the
// server answers with a server error, for at most Options.RetryFor. Right
// after a CRD is installed some servers fail OpenAPI requests for a moment
// (kcp v0.30.0 answers 500, "CRD ... not found"), and a compile must not
// fail for that. Called with r.mu held.
func (r *Resolver) fetchRetrying(gv schema.GroupVersion, refreshPaths bool) (*document, error) {
	deadline := time.Now().Add(r.opts.RetryFor)
	delay := 50 * time.Millisecond
	for {
		doc, err := r.fetch(gv, refreshPaths)
		if err == nil || !transient(err) || time.Now().Add(delay).After(deadline) {
			return doc, err
		}
		time.Sleep(delay)
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

func (r *Resolver) fetch(gv schema.GroupVersion, refreshPaths bool) (*document, error) {
	c, ok := r.paths[pathOf(gv)]
	stale := r.opts.Now().Sub(r.pathsFetched) >= r.opts.RefetchAfterMiss
	if r.paths == nil || refreshPaths || (!ok && stale) {
		if err := r.fetchPaths(); err != nil {
			return nil, err
		}
		c, ok = r.paths[pathOf(gv)]
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

// fetchPaths lists the group-versions the server documents. Called with
// r.mu held.
func (r *Resolver) fetchPaths() error {
	paths, err := r.client.Paths()
	if err != nil {
		return fmt.Errorf("listing OpenAPI v3 paths: %w", err)
	}
	r.paths, r.pathsFetched = paths, r.opts.Now()
	return nil
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
