package testing

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/lazycluster"
)

// SharedConnection is one HTTP client (transport and connection pool) and
// one REST mapper for many cluster objects that reach the same API server.
// controller-runtime gives every cluster.Cluster its own of both; for a
// fleet of simulated clusters on one server, or any clusters behind one
// endpoint (kcp workspaces through one front proxy, say), that is most of
// what an idle cluster costs. Option makes cluster.New reuse them.
type SharedConnection struct {
	HTTPClient *http.Client
	Mapper     meta.RESTMapper
}

// NewSharedConnection builds the HTTP client and lazy REST mapper for cfg.
func NewSharedConnection(cfg *rest.Config) (*SharedConnection, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("HTTP client for %s: %w", cfg.Host, err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("REST mapper for %s: %w", cfg.Host, err)
	}
	return &SharedConnection{HTTPClient: hc, Mapper: mapper}, nil
}

// Option is the cluster.Option that makes a cluster use s. Only give it to
// clusters whose rest.Config reaches the server s was built for.
func (s *SharedConnection) Option() cluster.Option {
	return func(o *cluster.Options) {
		o.HTTPClient = s.HTTPClient
		o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return s.Mapper, nil }
	}
}

// InNamespace confines a cluster's cache (informers, cached reads) to one
// namespace. Simulated clusters that share an API server use it so that
// each sees only its own instances and children; cluster-scoped kinds
// (CRDs) are still seen whole.
func InNamespace(ns string) cluster.Option {
	return func(o *cluster.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
}

// AddSimulated adds one cluster per name, all reaching the API server at
// cfg, each confined to the namespace of its name (see InNamespace), which
// the caller creates. With shared non-nil, the clusters share its HTTP
// client and REST mapper; otherwise each has its own, as separate clusters
// do. Like AddConfig's, each cluster is built and started at its first
// use. It stops at the first error.
func (p *Provider) AddSimulated(ctx context.Context, cfg *rest.Config, names []string, shared *SharedConnection) error {
	for _, name := range names {
		opts := append([]cluster.Option{InNamespace(name)}, p.clusterOpts...)
		if shared != nil {
			opts = append(opts, shared.Option())
		}
		cl, err := lazycluster.New(rest.CopyConfig(cfg), opts...)
		if err != nil {
			return fmt.Errorf("creating simulated cluster %q: %w", name, err)
		}
		if err := p.Add(ctx, name, cl); err != nil {
			return err
		}
	}
	return nil
}
