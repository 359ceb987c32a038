package clusterprofile

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fghub "github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/providers/access"
	"github.com/fleetgraph/fleetgraph/providers/internal/engaged"
)

const (
	// DefaultNamespace is the hub namespace whose ClusterProfiles are read.
	DefaultNamespace = "fleetgraph-system"
	// DefaultConsumerName is the consumer a kubeconfig Secret is written
	// for: its x-k8s.io/cluster-inventory-consumer label.
	DefaultConsumerName = "fleetgraph"
	// DefaultSecretDataKey is the kubeconfig Secret's data key, as
	// cluster inventory consumers read it.
	DefaultSecretDataKey = "Config"
	// DefaultPluginTimeout bounds each run of a credential plugin.
	DefaultPluginTimeout = 10 * time.Second
	// DefaultMaxPluginOutput bounds what a credential plugin may write to
	// its standard output: an ExecCredential with a token, or a client
	// certificate and key, is a few KiB.
	DefaultMaxPluginOutput = 64 << 10
	// DefaultUnhealthyGrace is how long a ClusterProfile may report its
	// control plane unhealthy before its cluster is disengaged.
	DefaultUnhealthyGrace = 2 * time.Minute
	// DefaultMaxConcurrentReconciles lets slow clusters not hold up others.
	DefaultMaxConcurrentReconciles = 4

	// ConsumerLabel and ProfileLabel mark a kubeconfig Secret: the
	// consumer it is written for and the ClusterProfile (in the Secret's
	// namespace) whose cluster it reaches.
	ConsumerLabel = "x-k8s.io/cluster-inventory-consumer"
	ProfileLabel  = "x-k8s.io/cluster-profile"
	// PropertyPrefix puts a ClusterProfile's status.properties among its
	// cluster's labels: property "region" with value "eu" is the label
	// "property.fleetgraph.dev/region: eu".
	PropertyPrefix = "property.fleetgraph.dev/"
)

// Event reasons recorded on ClusterProfiles besides access's.
const (
	// ReasonNoCredentials: the profile offers no access provider the
	// platform allows a plugin for, and no kubeconfig Secret reaches it.
	ReasonNoCredentials = "NoCredentials"
	// ReasonCredentialPluginFailed: the plugin ran and gave no usable
	// credential.
	ReasonCredentialPluginFailed = "CredentialPluginFailed"
	// ReasonControlPlaneUnhealthy: the profile reported its control plane
	// unhealthy for longer than Options.UnhealthyGrace.
	ReasonControlPlaneUnhealthy = "ControlPlaneUnhealthy"
	// ReasonPropertiesSkipped: some status.properties are not cluster
	// labels, because the name or the value is not valid in a label.
	ReasonPropertiesSkipped = "PropertiesSkipped"
)

var (
	// ErrNoCredentials means a ClusterProfile offers no access provider
	// that Options.CredentialPlugins allows and no kubeconfig Secret
	// reaches its cluster (or more than one does).
	ErrNoCredentials = errors.New("no usable credentials")
	// ErrPluginFailed means a credential plugin did not run to completion
	// within its bounds, or wrote no usable ExecCredential.
	ErrPluginFailed = errors.New("credential plugin failed")
	// ErrUnhealthy means a ClusterProfile reports its control plane
	// unhealthy, for longer than Options.UnhealthyGrace.
	ErrUnhealthy = errors.New("control plane unhealthy")
	// ErrInvalidOptions means Options cannot be used: a credential
	// plugin without a name or with a command that is not an absolute
	// path, or two plugins of one name. SetupWithManager returns it.
	ErrInvalidOptions = errors.New("invalid clusterprofile options")
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
	// Namespace is the hub namespace whose ClusterProfiles (and
	// kubeconfig Secrets) are read; only that namespace is listed and
	// watched. Set it to "" together with AllNamespaces to read every
	// namespace. Defaults to DefaultNamespace.
	Namespace string
	// AllNamespaces makes an empty Namespace mean every namespace. Cluster
	// names must then be unique across namespaces (the first profile
	// wins; a later one of the same name is reported and skipped).
	AllNamespaces bool
	// LabelSelector selects the ClusterProfiles to engage; it is applied
	// by the API server. Defaults to every ClusterProfile.
	LabelSelector labels.Selector
	// CredentialPlugins are the KEP-5339 credential plugins the platform
	// allows, by the access provider name that ClusterProfiles list in
	// status.accessProviders (or the deprecated credentialProviders); the
	// first one, in this order, that a profile lists is run for it. A
	// profile cannot name a program: only these run. Defaults to none: no
	// program ever runs, and profiles are reached through kubeconfig
	// Secrets only.
	CredentialPlugins []CredentialPlugin
	// PluginTimeout bounds each run of a credential plugin; it is killed
	// after it. Defaults to DefaultPluginTimeout.
	PluginTimeout time.Duration
	// MaxPluginOutput bounds, in bytes, what a plugin may write to its
	// standard output; a plugin that writes more fails. Defaults to
	// DefaultMaxPluginOutput.
	MaxPluginOutput int
	// ConsumerName selects the kubeconfig Secrets written for this hub:
	// those labelled ConsumerLabel=ConsumerName and ProfileLabel=<profile
	// name>, in the profile's namespace, whose SecretDataKey holds a
	// kubeconfig. Defaults to DefaultConsumerName.
	ConsumerName string
	// SecretDataKey is the kubeconfig Secret's data key. Defaults to
	// DefaultSecretDataKey.
	SecretDataKey string
	// UnhealthyGrace is how long a ClusterProfile's ControlPlaneHealthy
	// condition may stay False (from its lastTransitionTime) before the
	// cluster is disengaged; it is engaged again once the condition is
	// no longer False. A profile without the condition, or with it
	// Unknown, is engaged. Defaults to DefaultUnhealthyGrace.
	UnhealthyGrace time.Duration
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
	// MaxConcurrentReconciles is how many ClusterProfiles are processed
	// at once. Defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// ClusterOptions apply to every cluster created, after the provider's
	// own (which drop managedFields' field sets from the cache). Defaults
	// to none.
	ClusterOptions []cluster.Option
	// Safety lists the kubeconfig features accepted beyond inline
	// credentials and verified TLS, and the addresses the hub may dial,
	// for kubeconfig Secrets and for the cluster a profile's access
	// provider describes alike. Defaults to the zero access.Safety: exec
	// and auth-provider plugins in kubeconfigs, local files, proxy-url,
	// insecure-skip-tls-verify, http:// servers and loopback, link-local
	// and metadata addresses are refused.
	Safety access.Safety
}

func setOptionsDefaults(opts Options) Options {
	if opts.Namespace == "" && !opts.AllNamespaces {
		opts.Namespace = DefaultNamespace
	}
	if opts.LabelSelector == nil {
		opts.LabelSelector = labels.Everything()
	}
	if opts.PluginTimeout == 0 {
		opts.PluginTimeout = DefaultPluginTimeout
	}
	if opts.MaxPluginOutput == 0 {
		opts.MaxPluginOutput = DefaultMaxPluginOutput
	}
	if opts.ConsumerName == "" {
		opts.ConsumerName = DefaultConsumerName
	}
	if opts.SecretDataKey == "" {
		opts.SecretDataKey = DefaultSecretDataKey
	}
	if opts.UnhealthyGrace == 0 {
		opts.UnhealthyGrace = DefaultUnhealthyGrace
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

// Provider is a multicluster-runtime provider whose clusters come from
// ClusterProfiles on the hub. Wire it with SetupWithManager; the
// multicluster manager starts it. All methods are safe for concurrent use.
type Provider struct {
	opts     Options
	log      logr.Logger
	clusters *engaged.Clusters
	hub      hub
	plugins  plugins
	now      func() time.Time

	lock sync.Mutex
	// creds are the plugin credentials of the engaged profiles.
	creds map[types.NamespacedName]*pluginState
	// skipped are the properties last reported skipped, per profile.
	skipped map[types.NamespacedName]string
}

// New returns a Provider for opts, with defaults filled in.
func New(opts Options) *Provider {
	opts = setOptionsDefaults(opts)
	log := log.Log.WithName("clusterprofile-provider")
	return &Provider{
		opts: opts,
		log:  log,
		clusters: engaged.New(engaged.Options{
			QPS: opts.QPS, Burst: opts.Burst, ConnectTimeout: opts.ConnectTimeout,
			CacheSyncTimeout: opts.CacheSyncTimeout, ClusterOptions: opts.ClusterOptions, Log: log,
		}),
		plugins: plugins{timeout: opts.PluginTimeout, maxOutput: opts.MaxPluginOutput},
		now:     time.Now,
		creds:   map[types.NamespacedName]*pluginState{},
		skipped: map[types.NamespacedName]string{},
	}
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

// Registered reports whether a ClusterProfile names the cluster, engaged
// or not (unreachable, unhealthy, or being engaged with new credentials):
// a hub asks before it treats a disengaged cluster as one that left.
func (p *Provider) Registered(name multicluster.ClusterName) bool {
	return p.clusters.Registered(name)
}

// ClusterNames returns the names of the clusters engaged or being engaged,
// sorted.
func (p *Provider) ClusterNames() []multicluster.ClusterName {
	return p.clusters.ClusterNames()
}

// Labels returns the labels of the engaged cluster called name: its
// ClusterProfile's labels, and its status.properties under PropertyPrefix.
// It returns nil when no such cluster is engaged. The map is a copy.
func (p *Provider) Labels(name multicluster.ClusterName) map[string]string {
	return p.clusters.Labels(name)
}

// NotifyLabelsChanged implements hub.ClusterLabelNotifier: f is called
// after the labels of an engaged cluster changed with its profile's labels
// or properties.
func (p *Provider) NotifyLabelsChanged(f func(multicluster.ClusterName)) {
	p.clusters.NotifyLabelsChanged(f)
}

// EngagementFailures returns, per cluster name, why its profile's cluster
// is not engaged: the reason (as on the profile's Warning Event) and
// message, never credentials (hub.EngagementReporter).
func (p *Provider) EngagementFailures() map[multicluster.ClusterName]string {
	return p.clusters.EngagementFailures()
}
