package hub

import (
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// The defaults of Options' fields.
const (
	// DefaultFieldManager is the server-side apply field manager,
	// "fleetgraph": the one the instance engine (package spoke) writes
	// children with too.
	DefaultFieldManager = v1alpha1.FieldManager
	// DefaultEstablishTimeout bounds one wait for a CRD to be established.
	DefaultEstablishTimeout = 60 * time.Second
	// DefaultRequestTimeout bounds each request sent to a cluster.
	DefaultRequestTimeout = 15 * time.Second
	// DefaultSharedCheckTTL is how long a full check of a graph stands for
	// the other clusters of its API server.
	DefaultSharedCheckTTL = 30 * time.Second
)

// pollInterval is how often an applied CRD is checked for Established.
const pollInterval = 10 * time.Millisecond

// Options configures a FanOut. The zero value is usable: every field says
// its default, and New fills them in.
type Options struct {
	// FieldManager applies the CRDs and admission policies. Defaults to
	// DefaultFieldManager.
	FieldManager string
	// EstablishTimeout bounds one wait for a CRD to become established on
	// a cluster; the attempt then fails and is retried with backoff.
	// Defaults to DefaultEstablishTimeout.
	EstablishTimeout time.Duration
	// RequestTimeout bounds each request sent to a cluster: a cluster
	// whose API server stopped answering fails the attempt instead of
	// holding it for as long as the connection lives. Defaults to
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// SharedCheckTTL is how long a full check of a graph on one API server
	// stands for the other clusters that reach that server with the same
	// identity (simulated clusters, namespaces or virtual clusters on one
	// server): within it each such cluster costs one metadata read of the
	// CRD, shared with the clusters that ask at the same moment, instead
	// of a whole attempt. Defaults to DefaultSharedCheckTTL; negative
	// checks every cluster on its own.
	SharedCheckTTL time.Duration
	// Publisher, if set, serves the graphs instead of a CRD per cluster
	// (see Publisher); fleetgraph's hub sets it when its provider is one.
	// Defaults to nil: CRDs are applied to each cluster.
	Publisher Publisher
	// Reporter, if set, names the clusters that could not be engaged:
	// Status lists them as CRDNotEngaged. Defaults to nil: none listed.
	Reporter EngagementReporter
	// Expect, if set, names the engaged clusters each graph should be
	// served on, each with why it waits ("" when only the fan-out holds
	// it back), and the generation they are to serve: Status lists each
	// as CRDPending until its first attempt there ends. Defaults to every
	// engaged cluster, with nothing holding it back, for a graph given to
	// Serve; none for a graph only ever given to Ensure.
	Expect func(graph string) (generation int64, clusters map[string]string)
	// OnChange, if set, is called with a graph's name whenever its status
	// changes (a state, a message, a cluster joining or leaving). It is
	// called outside every lock and must not block.
	OnChange func(graph string)
	// OnTransition, if set, is called when a graph's state on a cluster
	// changes (not its message alone), e.g. to emit an event.
	OnTransition func(graph, cluster string, state CRDState, message string)
	// OnLeave, if set, is called when a cluster's engagement ends, unless
	// the cluster was engaged again under the same name meanwhile, after
	// the cluster has left every status.
	OnLeave func(c Cluster)
	// Logger defaults to controller-runtime's log.Log named "fanout".
	Logger logr.Logger
}

func (o Options) withDefaults() Options {
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if o.EstablishTimeout <= 0 {
		o.EstablishTimeout = DefaultEstablishTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.SharedCheckTTL == 0 {
		o.SharedCheckTTL = DefaultSharedCheckTTL
	}
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("fanout")
	}
	return o
}
