package agent

import (
	"errors"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// The defaults of Options' fields.
const (
	// DefaultStateNamespace holds the agent's state in its own cluster.
	DefaultStateNamespace = "fleetgraph-system"
	// DefaultRenewInterval is how often the agent renews its heartbeat.
	DefaultRenewInterval = 10 * time.Second
	// DefaultReportInterval is how often the agent looks for changes to
	// report, and retries reports the hub did not take.
	DefaultReportInterval = time.Second
	// DefaultSyncInterval is how often the agent reads its assignments
	// from its cache of the hub even without a change event.
	DefaultSyncInterval = 5 * time.Second
	// DefaultHubRequestTimeout bounds each request to the hub.
	DefaultHubRequestTimeout = 10 * time.Second
	// DefaultTokenTTL is the life of each token the agent requests for
	// itself.
	DefaultTokenTTL = 24 * time.Hour
	// DefaultTokenRotation is the fraction of a token's life after which
	// the agent replaces it.
	DefaultTokenRotation = 0.8
	// DefaultFieldManager writes the agent's objects on the hub and its
	// state in its own cluster (the spoke runtime writes with its own).
	DefaultFieldManager = "fleetgraph-agent"
)

// Options configures an Agent. Zero values take the defaults.
type Options struct {
	// Cluster is the PullCluster's name on the hub. Required.
	Cluster string
	// Hub reaches the hub cluster as the agent's identity there (the
	// ServiceAccount fleetgraph-agent in the cluster's namespace). Its
	// BearerToken, if any, is the token the agent rotates (see
	// Credential). Required.
	Hub *rest.Config
	// Local reaches the agent's own cluster. Required.
	Local *rest.Config
	// Credential, when set, names a Secret in the agent's own cluster
	// whose "kubeconfig" key holds the hub kubeconfig: every token the
	// agent requests for itself is written there, so that a restart uses
	// the newest. Defaults to none: tokens are rotated in memory only.
	Credential types.NamespacedName
	// TokenTTL is the life of each token the agent requests for itself;
	// it rotates at TokenRotation of a token's life (of the first one
	// too, read from the token when it is a JWT; a token whose life it
	// cannot read is replaced at once). Negative turns rotation off.
	// Defaults to DefaultTokenTTL.
	TokenTTL time.Duration
	// TokenRotation is how far into a token's life the agent replaces
	// it, as a fraction of that life. Defaults to DefaultTokenRotation.
	TokenRotation float64
	// StateNamespace is where, in its own cluster, the agent keeps its
	// assignments (one ConfigMap per graph). Created if missing. Defaults
	// to DefaultStateNamespace.
	StateNamespace string
	// RenewInterval: see DefaultRenewInterval. Keep it well below the
	// hub's heartbeat grace (sdk.PullOptions.HeartbeatGrace).
	RenewInterval time.Duration
	// ReportInterval: see DefaultReportInterval.
	ReportInterval time.Duration
	// SyncInterval: see DefaultSyncInterval.
	SyncInterval time.Duration
	// HubRequestTimeout: see DefaultHubRequestTimeout.
	HubRequestTimeout time.Duration
	// FieldManager: see DefaultFieldManager.
	FieldManager string
	// Spoke configures the spoke runtime that serves the graphs. Its
	// ClusterLabels, ClusterValues and LocalClusterName are the agent's
	// (from the assignments) and are overwritten.
	Spoke spoke.Options
	// Limits bound each graph's compile and evaluation, as the hub's
	// sdk.Options.Compile.Limits. Defaults to graph.Limits{}.WithDefaults().
	Limits graph.Limits
	// MetricsBindAddress serves the agent's metrics; "0" turns them off.
	// Defaults to "0".
	MetricsBindAddress string
	// Logger defaults to controller-runtime's log.Log named "agent".
	Logger logr.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Cluster == "" || o.Hub == nil || o.Local == nil {
		return o, errors.New("agent: Cluster, Hub and Local are required")
	}
	if len(o.Cluster) > fgv1alpha1.MaxPullClusterNameLength {
		return o, errors.New("agent: the cluster's name is longer than a PullCluster's may be")
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = DefaultTokenTTL
	}
	if o.TokenRotation <= 0 || o.TokenRotation >= 1 {
		o.TokenRotation = DefaultTokenRotation
	}
	if o.StateNamespace == "" {
		o.StateNamespace = DefaultStateNamespace
	}
	if o.RenewInterval <= 0 {
		o.RenewInterval = DefaultRenewInterval
	}
	if o.ReportInterval <= 0 {
		o.ReportInterval = DefaultReportInterval
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.HubRequestTimeout <= 0 {
		o.HubRequestTimeout = DefaultHubRequestTimeout
	}
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	o.Limits = o.Limits.WithDefaults()
	if o.MetricsBindAddress == "" {
		o.MetricsBindAddress = "0"
	}
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("agent")
	}
	return o, nil
}

// namespace is the cluster's namespace on the hub.
func (o Options) namespace() string { return fgv1alpha1.PullNamespace(o.Cluster) }
