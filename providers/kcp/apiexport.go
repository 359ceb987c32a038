package kcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kcp-dev/multicluster-provider/pkg/provider"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
)

var (
	_ multicluster.Provider         = &APIExportProvider{}
	_ multicluster.ProviderRunnable = &APIExportProvider{}
	_ hub.Publisher                 = &APIExportProvider{}
)

// APIExportOptions configure an APIExportProvider. The zero value is valid.
type APIExportOptions struct {
	// EndpointSlice names the APIExportEndpointSlice that lists the
	// export's virtual-workspace URLs, in the export's workspace. Defaults
	// to the export's name: kcp creates a slice named after each APIExport.
	EndpointSlice string
	// Scheme is used by the engaged clusters' clients and caches; kcp's
	// apis.kcp.io/v1alpha1 types (APIExportEndpointSlice, APIBinding), which
	// the provider watches, are added to it. Defaults to client-go's types
	// plus those; add the exported types, or use unstructured objects.
	Scheme *runtime.Scheme
	// EndpointWait bounds the wait, when the APIExportEndpointSlice lists a
	// new virtual-workspace URL, until that URL answers discovery. kcp
	// v0.30.0 lists the URL of a fresh export a moment before it serves it,
	// and the wrapped provider tries each URL once, on the slice's event,
	// so a URL watched too early would never engage anyone. Defaults to
	// DefaultEndpointWait.
	EndpointWait time.Duration
}

// DefaultEndpointWait is APIExportOptions.EndpointWait's default.
const DefaultEndpointWait = time.Minute

func setAPIExportDefaults(export string, opts APIExportOptions) (APIExportOptions, error) {
	if opts.EndpointSlice == "" {
		opts.EndpointSlice = export
	}
	if opts.EndpointWait == 0 {
		opts.EndpointWait = DefaultEndpointWait
	}
	if opts.Scheme == nil {
		opts.Scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(opts.Scheme); err != nil {
			return opts, err
		}
	}
	return opts, apisv1alpha1.AddToScheme(opts.Scheme)
}

// APIExportProvider is a multicluster-runtime provider whose clusters are
// the consumer workspaces that bind one APIExport: each workspace with a
// Ready APIBinding to it is engaged under its logical cluster name, through
// the APIExport's virtual workspace. It wraps
// github.com/kcp-dev/multicluster-provider's apiexport provider.
//
// A cluster of this provider sees only what the export offers (its
// resources and claimed permissions), not the whole workspace. So it is
// also the hub's hub.Publisher: the hub publishes each graph's schema as
// an APIResourceSchema of the APIExport instead of applying a CRD per
// cluster, and serves a consumer once its APIBinding accepts the graph's
// claims and is bound to the published schema. See the package
// documentation.
type APIExportProvider struct {
	inner    *provider.Provider
	urls     *servingURLs
	exporter *exporter
}

// NewAPIExport returns a provider for the consumers of the APIExport
// called export, which also publishes the hub's graphs in it (creating it
// when missing). cfg must reach the workspace that holds the export and
// its APIExportEndpointSlice (e.g. <server>/clusters/root:provider); its
// credentials need read access to the slice and to the export's virtual
// workspace (apiexports/content), and rights to create
// APIResourceSchemas and to create and update the APIExport.
func NewAPIExport(cfg *rest.Config, export string, opts APIExportOptions) (*APIExportProvider, error) {
	if export == "" {
		return nil, errors.New("kcp apiexport provider: the APIExport's name is required")
	}
	opts, err := setAPIExportDefaults(export, opts)
	if err != nil {
		return nil, fmt.Errorf("kcp apiexport provider: building the scheme: %w", err)
	}
	exp, err := newExporter(cfg, export)
	if err != nil {
		return nil, fmt.Errorf("kcp apiexport provider: %w", err)
	}
	logger := log.Log.WithName("kcp-apiexport-provider")
	urls := &servingURLs{cfg: cfg, wait: opts.EndpointWait, ctx: context.Background()}
	// The apiexport provider's own New, with a URL extractor that waits
	// for each URL to be served.
	inner, err := provider.NewProvider(cfg, opts.EndpointSlice, provider.Options{
		Scheme:                       opts.Scheme,
		EndpointSliceObject:          &apisv1alpha1.APIExportEndpointSlice{},
		ExtractURLsFromEndpointSlice: urls.extract,
		ObjectToWatch:                &apisv1alpha1.APIBinding{},
		Log:                          &logger,
		AddFilter:                    provider.ConditionReadyFunc("Ready"),
		UpdateFilter:                 provider.ConditionReadyFunc("Ready"),
	})
	if err != nil {
		return nil, fmt.Errorf("kcp apiexport provider: %w", err)
	}
	return &APIExportProvider{inner: inner, urls: urls, exporter: exp}, nil
}

// Start implements multicluster.ProviderRunnable.
func (p *APIExportProvider) Start(ctx context.Context, aware multicluster.Aware) error {
	p.urls.setContext(ctx)
	return p.inner.Start(ctx, aware)
}

// Get returns the engaged consumer cluster called name (its logical cluster
// name), or an error wrapping multicluster.ErrClusterNotFound.
func (p *APIExportProvider) Get(ctx context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	return p.inner.Get(ctx, name)
}

// IndexField implements multicluster.Provider.
func (p *APIExportProvider) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return p.inner.IndexField(ctx, obj, field, extract)
}

// ClusterNames returns the logical cluster names of the engaged consumer
// workspaces, sorted.
func (p *APIExportProvider) ClusterNames() []multicluster.ClusterName {
	return p.inner.Clusters.ClusterNames()
}

// Publish implements hub.Publisher: g's CRD becomes an immutable
// APIResourceSchema in the export's workspace, named v<hash>.<plural>.<group>
// after its content, and the export lists it for g's resource, with a
// permission claim (verbs ClaimVerbs) for every one of g.Kinds. A schema
// change that would break the listed schema is refused with an error
// wrapping hub.ErrIncompatible unless g.AllowBreaking: the export keeps
// listing the previous schema. A schema of that name that fleetgraph did
// not create is refused with hub.ErrConflict. Cheap once g is published.
func (p *APIExportProvider) Publish(ctx context.Context, g hub.Graph) error {
	_, err := p.exporter.publish(ctx, g)
	return err
}

// Serves implements hub.Publisher: cl, a consumer seen through the
// virtual workspace, serves g once its APIBinding to the export accepts
// every claim g needs (else an error wrapping ErrClaimsNotAccepted) and is
// bound to g's published schema (else hub.ErrNotServedYet).
func (p *APIExportProvider) Serves(ctx context.Context, cl cluster.Cluster, g hub.Graph) error {
	_, pub, err := p.exporter.publicationOf(g)
	if err != nil {
		return err
	}
	return p.exporter.serves(ctx, cl.GetAPIReader(), pub)
}

// servingURLs extracts the virtual-workspace URLs of an endpoint slice,
// waiting (up to wait, or until the provider stops) until each answers
// discovery.
type servingURLs struct {
	cfg  *rest.Config
	wait time.Duration

	mu  sync.Mutex
	ctx context.Context
}

func (s *servingURLs) setContext(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx = ctx
}

func (s *servingURLs) extract(obj client.Object) ([]string, error) {
	urls, err := provider.DefaultExtractURLsFromEndpointSlice(obj)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	for _, u := range urls {
		s.waitServed(ctx, u)
	}
	return urls, nil
}

// waitServed polls the wildcard endpoint of url until it lists its API
// groups; on timeout it gives up quietly (the provider then logs the
// failure to watch it).
func (s *servingURLs) waitServed(ctx context.Context, url string) {
	cfg := rest.CopyConfig(s.cfg)
	cfg.Host = strings.TrimSuffix(url, "/") + "/clusters/*"
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return
	}
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, s.wait, true, func(context.Context) (bool, error) {
		_, err := dc.ServerGroups()
		return err == nil, nil
	})
}
