package hub

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
)

// The hub type-checks a graph against the hub cluster's OpenAPI, but its
// children live on the spokes, which may serve another version of a child
// kind (an older Kubernetes, a custom CRD whose field has another type).
// So before a graph is served on a spoke, FanOut type-checks it again
// against that spoke's schemas of the graph's kinds (graph.CheckSchemas):
// where they disagree the spoke is Incompatible, with a message naming the
// spoke, the kind, the field path and the expression, and the version it
// serves already (if any) keeps serving.
//
// Each spoke has one schema resolver, which fetches a group-version's
// OpenAPI document once and keeps it (resolver.DefaultTTL), and the verdict
// per graph is kept as long as the spoke hands out the same schemas, so an
// Ensure on steady state costs a few map look-ups. Both go when the
// cluster's engagement ends.

// maxVerdicts bounds the verdicts kept per spoke; old graph versions drop
// out when it is reached.
const maxVerdicts = 64

// spokeSchemas holds the per-spoke resolvers and verdicts. The zero value
// is ready to use; it is safe for concurrent use.
type spokeSchemas struct {
	mu      sync.Mutex
	byName  map[string]*spokeSchemaCache
	resolve func(cluster.Cluster) (*resolver.Resolver, error) // tests may replace it
}

type spokeSchemaCache struct {
	cl       cluster.Cluster
	resolver *resolver.Resolver
	mu       sync.Mutex
	verdicts map[*graph.Graph]schemaVerdict
}

// schemaVerdict is the outcome of checking one graph against the schemas
// named by key (their identities: the resolver hands out the same pointer
// while it keeps a document).
type schemaVerdict struct {
	key string
	err error
}

// checkSpokeSchemas returns an error wrapping ErrIncompatible when c's
// schemas of g's child kinds do not type-check g, a plain error when they
// cannot be read, and nil otherwise (also for a graph compiled without
// schemas, since nothing was type-checked then).
func (f *FanOut) checkSpokeSchemas(c Cluster, g *graph.Graph) error {
	if !g.TypeChecked() {
		return nil
	}
	sc, err := f.spokeSchemas.forCluster(c)
	if err != nil {
		return err
	}
	return sc.check(c.Name, g)
}

func (s *spokeSchemas) forCluster(c Cluster) (*spokeSchemaCache, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc := s.byName[c.Name]; sc != nil && sc.cl == c.Cluster {
		return sc, nil
	}
	newResolver := s.resolve
	if newResolver == nil {
		newResolver = clusterResolver
	}
	r, err := newResolver(c.Cluster)
	if err != nil {
		return nil, fmt.Errorf("schema resolver for cluster %q: %w", c.Name, err)
	}
	sc := &spokeSchemaCache{cl: c.Cluster, resolver: r, verdicts: map[*graph.Graph]schemaVerdict{}}
	if s.byName == nil {
		s.byName = map[string]*spokeSchemaCache{}
	}
	s.byName[c.Name] = sc
	if c.Engagement != nil {
		context.AfterFunc(c.Engagement, func() { s.forget(c.Name, sc) })
	}
	return sc, nil
}

// forget drops a cluster's cache when its engagement ends, unless a new
// engagement replaced it already.
func (s *spokeSchemas) forget(name string, sc *spokeSchemaCache) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byName[name] == sc {
		delete(s.byName, name)
	}
}

func clusterResolver(cl cluster.Cluster) (*resolver.Resolver, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cl.GetConfig(), cl.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	return resolver.New(dc.OpenAPIV3(), resolver.Options{}), nil
}

func (sc *spokeSchemaCache) check(clusterName string, g *graph.Graph) error {
	r := spokeResolver{sc.resolver}
	key, err := schemasKey(r, g)
	if err != nil {
		return fmt.Errorf("reading the schemas of the graph's kinds on cluster %q: %w", clusterName, err)
	}
	sc.mu.Lock()
	v, ok := sc.verdicts[g]
	sc.mu.Unlock()
	if ok && v.key == key {
		return v.err
	}
	err = g.CheckSchemas(r)
	if errors.Is(err, graph.ErrSchemaUnavailable) {
		return fmt.Errorf("reading the schemas of the graph's kinds on cluster %q: %w", clusterName, err)
	}
	if err != nil {
		err = disagreement(clusterName, g, err)
	}
	sc.mu.Lock()
	if len(sc.verdicts) >= maxVerdicts {
		clear(sc.verdicts)
	}
	sc.verdicts[g] = schemaVerdict{key: key, err: err}
	sc.mu.Unlock()
	return err
}

// schemasKey names the schemas r has for g's kinds by identity, so a
// verdict is reused exactly while they stay the same.
func schemasKey(r spokeResolver, g *graph.Graph) (string, error) {
	seen := map[schema.GroupVersionKind]bool{}
	var parts []string
	for _, n := range g.Nodes {
		if seen[n.GVK] {
			continue
		}
		seen[n.GVK] = true
		s, err := r.ResolveSchema(n.GVK)
		switch {
		case errors.Is(err, graph.ErrSchemaNotFound):
			s = nil
		case err != nil:
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s=%p", n.GVK, s))
	}
	sort.Strings(parts)
	return strings.Join(parts, ","), nil
}

// disagreement turns CheckSchemas' errors into one ErrIncompatible naming
// the cluster and, for each error, the kind of the resource it is about.
func disagreement(clusterName string, g *graph.Graph, err error) error {
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
	return fmt.Errorf("%w: the schemas on cluster %q do not type-check the graph as the hub's do: %s",
		ErrIncompatible, clusterName, strings.Join(lines, "; "))
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

// spokeResolver reads a spoke's OpenAPI. A cluster that serves no OpenAPI
// document for a kind (or none at all) does not describe it: the kind is
// typed dyn there, as graph.ErrSchemaNotFound makes CheckSchemas do.
type spokeResolver struct{ r *resolver.Resolver }

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
