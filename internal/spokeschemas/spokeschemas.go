package spokeschemas

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

// The hub type-checks a graph against the hub cluster's OpenAPI, but its
// children live on the spokes, which may serve another version of a child
// kind (an older Kubernetes, a custom CRD whose field has another type).
// So before a graph is served on a spoke, the hub type-checks it again
// against that spoke's schemas of the graph's kinds (graph.CheckSchemas):
// where they disagree the spoke is Incompatible, with a message naming the
// spoke, the kind, the field path and the expression, and the version it
// serves already (if any) keeps serving.
//
// The API server lists its OpenAPI v3 documents with a content hash in each
// URL. A verdict is kept per graph and set of document URLs, so spokes that
// serve the same documents (a fleet on one Kubernetes version with the same
// CRDs) share one check: a spoke costs one small GET of the listing, and
// the spokes that ask while the check runs (a new graph reaches every
// engaged spoke at once) wait for it rather than check again. A
// document listed under a content hash is fetched and parsed once, whoever
// lists it, and kept for the checks of later graphs (sharedDoc): parsing
// core/v1's document again for every new graph was most of a new graph's
// fan-out time. Nothing is kept per spoke, so a fleet of thousands holds one
// copy of each distinct document, not one per spoke. A spoke that serves no
// OpenAPI v3 listing describes no kind: there is nothing to check.

// maxVerdicts bounds the verdicts kept; all are dropped when it is reached
// (old graph versions and schema sets fall out that way).
const maxVerdicts = 256

// maxSharedDocs bounds the parsed documents kept; all are dropped when it
// is reached (documents of CRDs changed since fall out that way).
const maxSharedDocs = 64

// Checker holds the verdicts and the parsed documents. The zero value is
// ready to use; it is safe for concurrent use.
type Checker struct {
	// Timeout bounds each request to a spoke (hub.Options.RequestTimeout).
	// Defaults to none.
	Timeout time.Duration

	mu       sync.Mutex
	verdicts map[schemaVerdictKey]error
	// checking are the checks under way: the spokes that ask for the same
	// verdict meanwhile (a new graph fanned out to a fleet at once) wait
	// for it instead of each type-checking the graph again.
	checking map[schemaVerdictKey]*verdictCall
	docs     map[string]*sharedDoc // by server-relative URL, hash included
	// openAPI returns a cluster's OpenAPI v3 client; tests replace it.
	openAPI func(cluster.Cluster) (openapi.Client, error)
	// recheck is graph.Graph.CheckSchemas; tests replace it.
	recheck func(*graph.Graph, graph.SchemaResolver) error
}

// verdictCall is one check under way, which the callers that need its
// verdict meanwhile wait for.
type verdictCall struct {
	done    chan struct{}
	err     error
	waiters int // under Checker.mu
}

// schemaVerdictKey is one graph checked against one set of documents,
// named by their URLs (content hashes included).
type schemaVerdictKey struct {
	g    *graph.Graph
	docs string
}

// Check returns an error wrapping hub.ErrIncompatible when cl's schemas
// of g's child kinds do not type-check g, a plain error when they cannot
// be read, and nil otherwise (also for a graph compiled without schemas,
// since nothing was type-checked then). Its errors do not name the
// cluster, whose API server other clusters may share: it is a
// hub.Graph's Check, and the FanOut names the cluster.
func (s *Checker) Check(ctx context.Context, cl cluster.Cluster, g *graph.Graph) error {
	if !g.TypeChecked() {
		return nil
	}
	err := s.check(ctx, cl, g)
	var incompatible *schemaDisagreement
	switch {
	case err == nil:
		return nil
	case errors.As(err, &incompatible):
		return disagreement(g, incompatible.err)
	}
	return &schemaUnread{err: err}
}

// schemaDisagreement is a verdict: CheckSchemas' error, kept as found.
type schemaDisagreement struct{ err error }

func (e *schemaDisagreement) Error() string { return e.err.Error() }

// schemaUnread: the schemas of the graph's kinds could not be read.
type schemaUnread struct{ err error }

func (e *schemaUnread) Error() string {
	return "reading the schemas of the graph's kinds: " + e.err.Error()
}
func (e *schemaUnread) Unwrap() error { return e.err }

func (s *Checker) check(ctx context.Context, cl cluster.Cluster, g *graph.Graph) error {
	newClient := s.openAPI
	if newClient == nil {
		newClient = func(cl cluster.Cluster) (openapi.Client, error) { return clusterOpenAPI(cl, s.Timeout) }
	}
	client, err := newClient(cl)
	if err != nil {
		return err
	}
	paths, err := client.Paths()
	switch {
	case apierrors.IsNotFound(err):
		return nil // no OpenAPI v3 listing: the cluster describes no kind
	case err != nil:
		return fmt.Errorf("listing OpenAPI v3 documents: %w", err)
	}
	docs, cacheable := documentsKey(paths, g)
	if !cacheable {
		return s.verdict(g, client, paths)
	}
	key := schemaVerdictKey{g: g, docs: docs}
	s.mu.Lock()
	if verdict, ok := s.verdicts[key]; ok {
		s.mu.Unlock()
		return verdict
	}
	if call := s.checking[key]; call != nil {
		call.waiters++
		s.mu.Unlock()
		select {
		case <-call.done:
			return call.err
		case <-ctx.Done(): // the caller stops (its hub does) before the check ends
			return ctx.Err()
		}
	}
	call := &verdictCall{done: make(chan struct{}), err: errNoVerdict}
	if s.checking == nil {
		s.checking = map[schemaVerdictKey]*verdictCall{}
	}
	s.checking[key] = call
	s.mu.Unlock()
	defer s.settle(key, call) // even if the check panics: no waiter is left waiting
	call.err = s.verdict(g, client, paths)
	return call.err
}

// errNoVerdict is what the callers waiting for a check get when it ended
// without one (it panicked).
var errNoVerdict = errors.New("the schema check ended without a verdict")

// settle ends call, the check of key: it keeps its verdict (not a failure
// to read the schemas, nor a check that ended without one) and releases
// the callers waiting for it.
func (s *Checker) settle(key schemaVerdictKey, call *verdictCall) {
	s.mu.Lock()
	delete(s.checking, key)
	if !errors.Is(call.err, graph.ErrSchemaUnavailable) && !errors.Is(call.err, errNoVerdict) {
		if s.verdicts == nil || len(s.verdicts) >= maxVerdicts {
			s.verdicts = map[schemaVerdictKey]error{}
		}
		s.verdicts[key] = call.err
	}
	s.mu.Unlock()
	close(call.done)
}

// verdict type-checks g against the documents client lists (paths).
func (s *Checker) verdict(g *graph.Graph, client openapi.Client, paths map[string]openapi.GroupVersion) error {
	recheck := s.recheck
	if recheck == nil {
		recheck = (*graph.Graph).CheckSchemas
	}
	err := recheck(g, spokeResolver{s.documents(client, paths)})
	switch {
	case errors.Is(err, graph.ErrSchemaUnavailable):
		return err
	case err != nil:
		return &schemaDisagreement{err: err}
	}
	return nil
}

// clusterOpenAPI is cl's OpenAPI v3 client; its requests end after
// timeout (0: none).
func clusterOpenAPI(cl cluster.Cluster, timeout time.Duration) (openapi.Client, error) {
	hc := cl.GetHTTPClient()
	if timeout > 0 {
		bounded := *hc
		bounded.Timeout = timeout
		hc = &bounded
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cl.GetConfig(), hc)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	return dc.OpenAPIV3(), nil
}

// documentsKey names the documents of g's group-versions by URL. It is
// cacheable only when every listed URL carries a content hash.
func documentsKey(paths map[string]openapi.GroupVersion, g *graph.Graph) (string, bool) {
	seen := map[schema.GroupVersion]bool{}
	var parts []string
	cacheable := true
	for _, n := range g.Nodes {
		gv := n.GVK.GroupVersion()
		if seen[gv] {
			continue
		}
		seen[gv] = true
		doc, ok := paths[openAPIPath(gv)]
		if !ok {
			parts = append(parts, gv.String()+"=-")
			continue
		}
		url := doc.ServerRelativeURL()
		cacheable = cacheable && strings.Contains(url, "hash=")
		parts = append(parts, gv.String()+"="+url)
	}
	sort.Strings(parts)
	return strings.Join(parts, ","), cacheable
}

func openAPIPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// listedPaths is an openapi.Client whose listing was fetched already.
type listedPaths struct {
	client openapi.Client
	paths  map[string]openapi.GroupVersion
}

func (l listedPaths) Paths() (map[string]openapi.GroupVersion, error) { return l.paths, nil }

// disagreement turns CheckSchemas' errors into one hub.ErrIncompatible
// naming, for each error, the kind of the resource it is about.
func disagreement(g *graph.Graph, err error) error {
	var lines []string
	for _, e := range splitErrors(err) {
		var ge *graph.Error
		if errors.As(e, &ge) && ge.ResourceID != "" {
			if n := g.Node(ge.ResourceID); n != nil {
				lines = append(lines, fmt.Sprintf("kind %s: %v", n.GVK, e))
				continue
			}
		}
		lines = append(lines, e.Error())
	}
	return fmt.Errorf("%w: its schemas do not type-check the graph as the hub's do: %s",
		hub.ErrIncompatible, strings.Join(lines, "; "))
}

// splitErrors returns the errors err joins, recursively; err alone if it
// joins none.
func splitErrors(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, splitErrors(e)...)
	}
	return out
}

// documents returns the resolver of one check: each group-version's
// document is the shared one for its URL when the URL carries a content
// hash, else one fetched for this check alone.
func (s *Checker) documents(client openapi.Client, paths map[string]openapi.GroupVersion) *checkResolver {
	return &checkResolver{s: s, client: client, paths: paths}
}

// sharedDoc is one content-hashed document, parsed once. Its resolver
// fetches through the latest spoke that listed it: the hash says they all
// serve the same bytes, and no spoke's client is held once another lists
// it.
type sharedDoc struct {
	source *latestSource
	r      *resolver.Resolver
}

// doc returns the shared document listed at path with gv's client, making
// it if it is new.
func (s *Checker) doc(path string, gv openapi.GroupVersion) *sharedDoc {
	url := gv.ServerRelativeURL()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[url]
	if d == nil {
		if s.docs == nil || len(s.docs) >= maxSharedDocs {
			s.docs = map[string]*sharedDoc{}
		}
		src := &latestSource{}
		// A content-hashed document never changes: keep it, and never
		// fetch it again for a kind it lacks.
		forever := time.Duration(math.MaxInt64)
		d = &sharedDoc{source: src, r: resolver.New(src.client(path), resolver.Options{TTL: forever, RefetchAfterMiss: forever})}
		s.docs[url] = d
	}
	d.source.set(gv)
	return d
}

// latestSource is an openapi.GroupVersion that reads through the one set
// last.
type latestSource struct {
	mu sync.Mutex
	gv openapi.GroupVersion
}

func (l *latestSource) set(gv openapi.GroupVersion) {
	l.mu.Lock()
	l.gv = gv
	l.mu.Unlock()
}

func (l *latestSource) current() openapi.GroupVersion {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gv
}

func (l *latestSource) Schema(contentType string) ([]byte, error) {
	return l.current().Schema(contentType)
}

func (l *latestSource) ServerRelativeURL() string { return l.current().ServerRelativeURL() }

// client lists l alone, at path.
func (l *latestSource) client(path string) openapi.Client {
	return listedPaths{paths: map[string]openapi.GroupVersion{path: l}}
}

// checkResolver resolves kinds for one check, group-version by
// group-version, from the documents the spoke lists.
type checkResolver struct {
	s      *Checker
	client openapi.Client
	paths  map[string]openapi.GroupVersion
	own    *resolver.Resolver // documents without a hash
}

var (
	_ graph.SchemaResolver = &checkResolver{}
	_ graph.ScopeResolver  = &checkResolver{}
)

// resolverFor returns the resolver of gv's document; nil when the spoke
// lists none.
func (c *checkResolver) resolverFor(gv schema.GroupVersion) *resolver.Resolver {
	path := openAPIPath(gv)
	doc, ok := c.paths[path]
	if !ok {
		return nil
	}
	if strings.Contains(doc.ServerRelativeURL(), "hash=") {
		return c.s.doc(path, doc).r
	}
	if c.own == nil {
		c.own = resolver.New(listedPaths{client: c.client, paths: c.paths}, resolver.Options{})
	}
	return c.own
}

func (c *checkResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	r := c.resolverFor(gvk.GroupVersion())
	if r == nil {
		return nil, fmt.Errorf("%w: the API server does not serve %s", graph.ErrSchemaNotFound, gvk.GroupVersion())
	}
	return r.ResolveSchema(gvk)
}

func (c *checkResolver) IsNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	r := c.resolverFor(gvk.GroupVersion())
	if r == nil {
		return false, fmt.Errorf("%w: the API server does not serve %s", graph.ErrSchemaNotFound, gvk.GroupVersion())
	}
	return r.IsNamespaced(gvk)
}

// spokeResolver reads a spoke's OpenAPI. A cluster that serves no OpenAPI
// document for a kind (or none at all) does not describe it: the kind is
// typed dyn there, as graph.ErrSchemaNotFound makes CheckSchemas do.
type spokeResolver struct{ r *checkResolver }

var (
	_ graph.SchemaResolver = spokeResolver{}
	_ graph.ScopeResolver  = spokeResolver{}
)

func (s spokeResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	out, err := s.r.ResolveSchema(gvk)
	return out, notFoundAsUnknown(err)
}

func (s spokeResolver) IsNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	out, err := s.r.IsNamespaced(gvk)
	return out, notFoundAsUnknown(err)
}

func notFoundAsUnknown(err error) error {
	if err != nil && apierrors.IsNotFound(err) && !errors.Is(err, graph.ErrSchemaNotFound) {
		return fmt.Errorf("%w: %w", graph.ErrSchemaNotFound, err)
	}
	return err
}
