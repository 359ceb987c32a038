package capi

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fghub "github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/providers/access"
	"github.com/fleetgraph/fleetgraph/providers/internal/engaged"
)

const (
	// DefaultNamespace is the hub namespace whose Clusters (and their
	// kubeconfig Secrets) are read: where clusterctl puts them unless told
	// otherwise.
	DefaultNamespace = "default"
	// DefaultMaxConcurrentReconciles lets slow clusters not hold up others.
	DefaultMaxConcurrentReconciles = 4

	// KubeconfigSuffix names a Cluster's kubeconfig Secret: Cluster API
	// writes it as <cluster name>-kubeconfig, in the Cluster's namespace.
	KubeconfigSuffix = "-kubeconfig"
	// KubeconfigDataKey is the kubeconfig Secret's data key.
	KubeconfigDataKey = "value"
	// ClusterNameLabel is the label Cluster API puts on the Secrets of a
	// Cluster, valued with its name. The provider reads only Secrets that
	// carry it.
	ClusterNameLabel = "cluster.x-k8s.io/cluster-name"
)

// ReasonControlPlaneNotReady is the Event reason (besides access's) for a
// Cluster whose control plane is not initialized yet.
const ReasonControlPlaneNotReady = "ControlPlaneNotReady"

// ErrControlPlaneNotReady means a Cluster's control plane is not
// initialized yet: neither status.initialization.controlPlaneInitialized
// nor its ControlPlaneInitialized condition is true.
var ErrControlPlaneNotReady = errors.New("control plane not initialized")

var (
	_ multicluster.Provider         = &Provider{}
	_ multicluster.ProviderRunnable = &Provider{}
	_ fghub.ClusterLabeler          = &Provider{}
	_ fghub.ClusterLabelNotifier    = &Provider{}
	_ fghub.ClusterRegistry         = &Provider{}
	_ fghub.EngagementReporter      = &Provider{}
)

// Options configure a Provider. The zero value is valid: every field
// documents its default.
type Options struct {
	// Namespace is the hub namespace whose Cluster API Clusters and
	// kubeconfig Secrets are read; only that namespace is listed and
	// watched. Set it to "" together with AllNamespaces to read every
	// namespace. Defaults to DefaultNamespace.
	Namespace string
	// AllNamespaces makes an empty Namespace mean every namespace. Cluster
	// names must then be unique across namespaces (the first Cluster
	// wins; a later one of the same name is reported and skipped).
	AllNamespaces bool
	// LabelSelector selects the Clusters to engage; it is applied by the
	// API server. Defaults to every Cluster.
	LabelSelector labels.Selector
	// QPS and Burst set each cluster's client rate limits when its
	// kubeconfig leaves them zero. Default to access.DefaultQPS and
	// access.DefaultBurst.
	QPS   float32
	Burst int
	// ConnectTimeout bounds the check, before engaging, that the server is
	// reachable and accepts the credentials. Defaults to
	// access.DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CacheSyncTimeout bounds the wait for a new cluster's cache to sync.
	// Defaults to access.DefaultCacheSyncTimeout.
	CacheSyncTimeout time.Duration
	// MaxConcurrentReconciles is how many Clusters are processed at once.
	// Defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// ClusterOptions apply to every cluster created, after the provider's
	// own (which drop managedFields' field sets from the cache). Defaults
	// to none.
	ClusterOptions []cluster.Option
	// Safety lists the kubeconfig features accepted beyond inline
	// credentials and verified TLS, and the addresses the hub may dial.
	// Defaults to the zero access.Safety: exec and auth-provider plugins,
	// local files, proxy-url, insecure-skip-tls-verify, http:// servers
	// and loopback, link-local and metadata addresses are refused.
	Safety access.Safety
}

func setOptionsDefaults(opts Options) Options {
	if opts.Namespace == "" && !opts.AllNamespaces {
		opts.Namespace = DefaultNamespace
	}
	if opts.LabelSelector == nil {
		opts.LabelSelector = labels.Everything()
	}
	if opts.QPS == 0 {
		opts.QPS = access.DefaultQPS
	}
	if opts.Burst == 0 {
		opts.Burst = access.DefaultBurst
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = access.DefaultConnectTimeout
	}
	if opts.CacheSyncTimeout == 0 {
		opts.CacheSyncTimeout = access.DefaultCacheSyncTimeout
	}
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	return opts
}

// Provider is a multicluster-runtime provider whose clusters are the
// Cluster API Clusters on the hub (the management cluster). Wire it with
// SetupWithManager; the multicluster manager starts it. All methods are
// safe for concurrent use.
type Provider struct {
	opts     Options
	log      logr.Logger
	clusters *engaged.Clusters
	hub      hub
}

// New returns a Provider for opts, with defaults filled in.
func New(opts Options) *Provider {
	opts = setOptionsDefaults(opts)
	log := log.Log.WithName("capi-provider")
	return &Provider{opts: opts, log: log, clusters: engaged.New(engaged.Options{
		QPS: opts.QPS, Burst: opts.Burst, ConnectTimeout: opts.ConnectTimeout,
		CacheSyncTimeout: opts.CacheSyncTimeout, ClusterOptions: opts.ClusterOptions, Log: log,
	})}
}

// Start implements multicluster.ProviderRunnable: the multicluster manager
// calls it once. Clusters are engaged with aware under contexts derived from
// ctx. Start returns when ctx is done and every cluster has stopped.
func (p *Provider) Start(ctx context.Context, aware multicluster.Aware) error {
	return p.clusters.Start(ctx, aware)
}

// Get returns the engaged cluster called name, or an error wrapping
// multicluster.ErrClusterNotFound.
func (p *Provider) Get(ctx context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	return p.clusters.Get(ctx, name)
}

// IndexField implements multicluster.Provider: the index is added to every
// engaged cluster and to every cluster engaged later.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return p.clusters.IndexField(ctx, obj, field, extract)
}

// Registered reports whether a Cluster names the cluster, engaged or not
// (its control plane not ready yet, unreachable, or being engaged with a
// rotated kubeconfig): a hub asks before it treats a disengaged cluster as
// one that left.
func (p *Provider) Registered(name multicluster.ClusterName) bool {
	return p.clusters.Registered(name)
}

// ClusterNames returns the names of the clusters engaged or being engaged,
// sorted.
func (p *Provider) ClusterNames() []multicluster.ClusterName {
	return p.clusters.ClusterNames()
}

// Labels returns the labels of the engaged cluster called name: its
// Cluster's labels. It returns nil when no such cluster is engaged. The
// map is a copy.
func (p *Provider) Labels(name multicluster.ClusterName) map[string]string {
	return p.clusters.Labels(name)
}

// NotifyLabelsChanged implements hub.ClusterLabelNotifier: f is called
// after the labels of an engaged cluster changed with its Cluster's.
func (p *Provider) NotifyLabelsChanged(f func(multicluster.ClusterName)) {
	p.clusters.NotifyLabelsChanged(f)
}

// EngagementFailures returns, per cluster name, why its Cluster is not
// engaged: the reason (as on the Cluster's Warning Event) and message,
// never credentials (hub.EngagementReporter).
func (p *Provider) EngagementFailures() map[multicluster.ClusterName]string {
	return p.clusters.EngagementFailures()
}
