package kcp

import (
	"context"
	"fmt"

	"github.com/kcp-dev/multicluster-provider/apiexport"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
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
}

func setAPIExportDefaults(opts APIExportOptions) (APIExportOptions, error) {
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
	inner *apiexport.Provider
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
	inner, err := apiexport.New(cfg, endpointSlice, apiexport.Options{Scheme: opts.Scheme, Log: &logger})
	if err != nil {
		return nil, fmt.Errorf("kcp apiexport provider: %w", err)
	}
	return &APIExportProvider{inner: inner}, nil
}

// Start implements multicluster.ProviderRunnable.
func (p *APIExportProvider) Start(ctx context.Context, aware multicluster.Aware) error {
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
