package secret

import (
	"context"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
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
	// DefaultNamespace is the hub namespace whose Secrets are read. A fixed
	// namespace keeps the hub's read access to Secrets narrow.
	DefaultNamespace = "fleetgraph-system"
	// DefaultSecretLabel is the label (with value "true") that marks a
	// kubeconfig Secret.
	DefaultSecretLabel = "fleetgraph.dev/kubeconfig"
	// DefaultDataKey is the Secret data key holding the kubeconfig.
	DefaultDataKey = "kubeconfig"
	// ClusterNameAnnotation on a Secret names its cluster; without it the
	// cluster is named after the Secret.
	ClusterNameAnnotation = "fleetgraph.dev/cluster-name"
	// LabelPrefix marks the Secret labels that become cluster labels, with
	// the prefix removed: "cluster.fleetgraph.dev/region: eu" on the Secret
	// is "region: eu" in Labels.
	LabelPrefix = "cluster.fleetgraph.dev/"
	// DefaultQPS and DefaultBurst limit each cluster's client.
	DefaultQPS   = access.DefaultQPS
	DefaultBurst = access.DefaultBurst
	// DefaultConnectTimeout bounds the reachability check before engaging.
	DefaultConnectTimeout = access.DefaultConnectTimeout
	// DefaultCacheSyncTimeout bounds the wait for a new cluster's cache.
	DefaultCacheSyncTimeout = access.DefaultCacheSyncTimeout
	// DefaultMaxConcurrentReconciles lets slow clusters not hold up others.
	DefaultMaxConcurrentReconciles = 4
)

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
	// Namespace is the hub namespace whose Secrets are read; only that
	// namespace is listed and watched. Set it to metav1.NamespaceAll ("")
	// together with AllNamespaces to read every namespace.
	// Defaults to DefaultNamespace.
	Namespace string
	// AllNamespaces makes an empty Namespace mean every namespace. Cluster
	// names must then be unique across namespaces (the first Secret wins; a
	// later one with the same cluster name is reported and skipped).
	AllNamespaces bool
	// LabelSelector selects kubeconfig Secrets; it is applied by the API
	// server, so no other Secret reaches the hub's memory. Use
	// "sigs.k8s.io/multicluster-runtime-kubeconfig=true" to read Secrets
	// written for multicluster-runtime's kubeconfig provider.
	// Defaults to DefaultSecretLabel=true.
	LabelSelector labels.Selector
	// DataKey is the Secret data key holding the kubeconfig.
	// Defaults to DefaultDataKey.
	DataKey string
	// QPS and Burst set each cluster's client rate limits when its
	// kubeconfig leaves them zero. Default to DefaultQPS and DefaultBurst.
	QPS   float32
	Burst int
	// ConnectTimeout bounds the check, before engaging, that the server is
	// reachable and accepts the credentials. Defaults to DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CacheSyncTimeout bounds the wait for a new cluster's cache to sync.
	// Defaults to DefaultCacheSyncTimeout.
	CacheSyncTimeout time.Duration
	// MaxConcurrentReconciles is how many Secrets are processed at once.
	// Defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// ClusterOptions apply to every cluster created (a scheme, cache
	// options), after the provider's own: each cluster's cache drops the
	// field sets of managedFields (sdk.TrimCache), which the hub never
	// reads and which are about a quarter of its heap per instance. Set a
	// cache DefaultTransform here to keep them. Defaults to none.
	ClusterOptions []cluster.Option
	// Safety lists the kubeconfig features accepted beyond inline
	// credentials and verified TLS, and the addresses the hub may dial.
	// Defaults to the zero Safety: exec and auth-provider plugins, local
	// files, proxy-url, insecure-skip-tls-verify, http:// servers and
	// loopback, link-local and metadata addresses are refused with
	// ErrUnsafeKubeconfig; private and public addresses are accepted.
	Safety Safety
}

func setOptionsDefaults(opts Options) Options {
	if opts.Namespace == "" && !opts.AllNamespaces {
		opts.Namespace = DefaultNamespace
	}
	if opts.LabelSelector == nil {
		opts.LabelSelector = labels.SelectorFromSet(labels.Set{DefaultSecretLabel: "true"})
	}
	if opts.DataKey == "" {
		opts.DataKey = DefaultDataKey
	}
	if opts.QPS == 0 {
		opts.QPS = DefaultQPS
	}
	if opts.Burst == 0 {
		opts.Burst = DefaultBurst
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.CacheSyncTimeout == 0 {
		opts.CacheSyncTimeout = DefaultCacheSyncTimeout
	}
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	return opts
}

// Provider is a multicluster-runtime provider whose clusters come from
// kubeconfig Secrets on the hub. Wire it with SetupWithManager; the
// multicluster manager starts it.
//
// A Secret's cluster is engaged once its cache has synced; when the Secret
// is deleted, loses its label or its kubeconfig becomes unusable, the
// cluster's engagement context is cancelled; when its kubeconfig changes,
// the old cluster is disengaged and stopped before the new one is engaged
// under the same name. All methods are safe for concurrent use.
type Provider struct {
	opts     Options
	log      logr.Logger
	clusters *engaged.Clusters
	hub      hub
}

// New returns a Provider for opts, with defaults filled in.
func New(opts Options) *Provider {
	opts = setOptionsDefaults(opts)
	log := log.Log.WithName("secret-provider")
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

// Registered reports whether a kubeconfig Secret names the cluster, engaged
// or not: one whose server is unreachable, or whose new kubeconfig is being
// engaged, is still registered. A hub asks this before it treats a
// disengaged cluster as one that left the fleet (sdk.ClusterRegistry).
func (p *Provider) Registered(name multicluster.ClusterName) bool {
	return p.clusters.Registered(name)
}

// ClusterNames returns the names of the clusters engaged or being engaged
// (a rotated kubeconfig replaces its cluster under the same name), sorted.
func (p *Provider) ClusterNames() []multicluster.ClusterName {
	return p.clusters.ClusterNames()
}

// Labels returns the labels of the engaged cluster called name: its
// Secret's labels under LabelPrefix, with the prefix removed. It returns
// nil when no such cluster is engaged. The map is a copy.
func (p *Provider) Labels(name multicluster.ClusterName) map[string]string {
	return p.clusters.Labels(name)
}

// NotifyLabelsChanged implements hub.ClusterLabelNotifier: f is called
// after the labels of an engaged cluster changed with its Secret's.
func (p *Provider) NotifyLabelsChanged(f func(multicluster.ClusterName)) {
	p.clusters.NotifyLabelsChanged(f)
}

// EngagementFailures returns, per cluster name, why its Secret's cluster is
// not engaged: the reason (as on the Secret's Warning Event) and message,
// never credentials. A cluster engaged since, or whose Secret is gone, is
// not listed. It lets the hub show clusters that never joined in its fleet
// status (hub.EngagementReporter).
func (p *Provider) EngagementFailures() map[multicluster.ClusterName]string {
	return p.clusters.EngagementFailures()
}

// clusterLabels extracts the cluster labels of a Secret.
func clusterLabels(s *corev1.Secret) map[string]string {
	out := map[string]string{}
	for k, v := range s.Labels {
		if rest, ok := strings.CutPrefix(k, LabelPrefix); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}

// clusterName is the name of a Secret's cluster.
func clusterName(s *corev1.Secret) multicluster.ClusterName {
	if n := s.Annotations[ClusterNameAnnotation]; n != "" {
		return multicluster.ClusterName(n)
	}
	return multicluster.ClusterName(s.Name)
}
