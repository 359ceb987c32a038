package kcp

import (
	"context"
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
)

var (
	_ multicluster.Provider         = &APIExportProvider{}
	_ multicluster.ProviderRunnable = &APIExportProvider{}
)

// APIExportOptions configure an APIExportProvider. The zero value is valid.
type APIExportOptions struct {
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

func setAPIExportDefaults(opts APIExportOptions) (APIExportOptions, error) {
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
// resources and claimed permissions), not the whole workspace: the hub
// publishes a graph's schema as an APIResourceSchema of the APIExport
// instead of applying a CRD per cluster. See the package documentation.
type APIExportProvider struct {
	inner *provider.Provider
	urls  *servingURLs
}

// NewAPIExport returns a provider for the consumers of the APIExport whose
// APIExportEndpointSlice is called endpointSlice. cfg must reach the
// workspace holding that slice (e.g. <server>/clusters/root:provider); kcp
// creates a slice named after each APIExport in the export's workspace. Its
// credentials need read access to the slice and to the export's virtual
// workspace (apiexports/content).
func NewAPIExport(cfg *rest.Config, endpointSlice string, opts APIExportOptions) (*APIExportProvider, error) {
	opts, err := setAPIExportDefaults(opts)
	if err != nil {
		return nil, fmt.Errorf("kcp apiexport provider: building the scheme: %w", err)
	}
	logger := log.Log.WithName("kcp-apiexport-provider")
	urls := &servingURLs{cfg: cfg, wait: opts.EndpointWait, ctx: context.Background()}
	// The apiexport provider's own New, with a URL extractor that waits
	// for each URL to be served.
	inner, err := provider.NewProvider(cfg, endpointSlice, provider.Options{
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
	return &APIExportProvider{inner: inner, urls: urls}, nil
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
