package agent

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// Agent serves, on its own cluster, what the hub assigns to that cluster.
// Run it with Run; it is not reusable after Run returns.
type Agent struct {
	opts Options

	local    manager.Manager
	rt       *spoke.Runtime
	fanOut   *hub.FanOut
	resolver graph.SchemaResolver
	state    *stateStore // state.go
	token    *tokens     // token.go

	hubClient client.Client // live, each request bounded
	hubScheme *runtime.Scheme
	hubCaches atomic.Pointer[hubCache] // hubcache.go: the cluster's GraphAssignments
	contact   hubContact
	wake      chan struct{}

	mu     sync.Mutex
	graphs map[string]*served // by graph name

	conds conditions // health.go

	compiles struct {
		mu     sync.Mutex
		graphs map[compileKey]*graph.Graph
	}
}

// served is one graph as the agent serves it.
type served struct {
	name string
	// generation and spec are the assignment acted on.
	generation int64
	spec       fgv1alpha1.GraphAssignmentSpec
	values     map[string]any // spec.Values decoded
	// version is what was given to the runtime for it; a nil Graph when
	// the snapshot did not compile (compileErr says why).
	version    spoke.Version
	compileErr error
	// previous is the revision the cluster served last (persisted), which
	// serves it after a restart until the assigned one's gate passes.
	previous *servedRecord
	// stopped: the graph's CRD was deleted, as its removal asked.
	stopped bool
	// reported is the last report the hub took (its Time zeroed).
	reported *fgv1alpha1.GraphReportStatus
	// crdMessage says what the removal's CRD step did.
	crdMessage string
	crdDeleted bool
}

// New returns an Agent.
func New(opts Options) (*Agent, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Agent{opts: opts, graphs: map[string]*served{}, wake: make(chan struct{}, 1)}
	a.token, err = newTokens(opts) // token.go: wraps opts.Hub's transport
	if err != nil {
		return nil, err
	}
	hubScheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{fgv1alpha1.AddToScheme, coordinationv1.AddToScheme, corev1.AddToScheme, authenticationv1.AddToScheme} {
		if err := add(hubScheme); err != nil {
			return nil, fmt.Errorf("agent: the hub's scheme: %w", err)
		}
	}
	hubCfg := a.token.config()
	hubCfg.Timeout = opts.HubRequestTimeout
	if a.hubClient, err = client.New(hubCfg, client.Options{Scheme: hubScheme, Mapper: hubMapper()}); err != nil {
		return nil, fmt.Errorf("agent: a client for the hub: %w", err)
	}
	a.hubScheme = hubScheme
	if err := a.setupLocal(); err != nil {
		return nil, err
	}
	return a, nil
}

// setupLocal makes the manager of the agent's own cluster, with the spoke
// runtime and the fan-out that installs the CRDs there.
func (a *Agent) setupLocal() error {
	o := a.opts
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("agent: the local scheme: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("agent: the local scheme: %w", err)
	}
	mgr, err := manager.New(rest.CopyConfig(o.Local), manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress: "0",
		Logger:                 o.Logger,
	})
	if err != nil {
		return fmt.Errorf("agent: a manager of the local cluster: %w", err)
	}
	a.local = mgr
	if a.resolver, err = resolver.NewForConfig(rest.CopyConfig(o.Local), resolver.Options{}); err != nil {
		return fmt.Errorf("agent: a schema resolver of the local cluster: %w", err)
	}
	a.state = &stateStore{namespace: o.StateNamespace, fieldManager: o.FieldManager}
	spokeOpts := o.Spoke
	spokeOpts.ClusterLabels = a.clusterLabels
	spokeOpts.ClusterValues = a.clusterValues
	spokeOpts.LocalClusterName = o.Cluster
	if spokeOpts.Logger.GetSink() == nil {
		spokeOpts.Logger = o.Logger.WithName("spoke")
	}
	a.rt = spoke.New(spokeOpts)
	a.rt.SetGate(a.gate)         // crd.go
	a.rt.SetFallback(a.fallback) // assignments.go
	a.fanOut = hub.New(hub.Options{FieldManager: spokeOpts.FieldManager, Logger: o.Logger.WithName("crds")})
	for _, r := range []manager.Runnable{a.fanOut, a.rt, manager.RunnableFunc(a.engage), manager.RunnableFunc(a.serve)} {
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	return nil
}

// Run runs the agent until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	return a.local.Start(ctx)
}

// engage gives the local cluster to the fan-out, then to the runtime
// (whose gate needs the fan-out to know it).
func (a *Agent) engage(ctx context.Context) error {
	if err := a.fanOut.Engage(ctx, mcmanager.LocalCluster, a.local); err != nil {
		return err
	}
	if err := a.rt.Engage(ctx, mcmanager.LocalCluster, a.local); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// serve is the agent's work once the manager runs: the assignments it
// kept are served at once, then the hub's are followed, and reports,
// heartbeats and tokens are written, until ctx ends.
func (a *Agent) serve(ctx context.Context) error {
	local, err := client.New(a.local.GetConfig(), client.Options{Scheme: a.local.GetScheme()})
	if err != nil {
		return fmt.Errorf("agent: a client of the local cluster: %w", err)
	}
	a.state.client = local
	if err := a.restore(ctx); err != nil { // assignments.go
		return err
	}
	hc, err := a.newHubCache(ctx) // hubcache.go
	if err != nil {
		return err
	}
	a.hubCaches.Store(hc)
	var wg sync.WaitGroup
	wg.Go(func() { a.follow(ctx) })    // assignments.go
	wg.Go(func() { a.report(ctx) })    // report.go
	wg.Go(func() { a.heartbeat(ctx) }) // report.go
	wg.Go(func() { a.token.rotate(ctx, a.hubClient, local) })
	wg.Wait()
	return nil
}

// hubMapper maps the kinds the agent uses on the hub without asking the
// hub's discovery: an agent that starts while the hub is away must not
// wait for it.
func hubMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphAssignmentKind),
		fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphReportKind),
		coordinationv1.SchemeGroupVersion.WithKind("Lease"),
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	} {
		m.Add(gvk, meta.RESTScopeNamespace)
		m.Add(gvk.GroupVersion().WithKind(gvk.Kind+"List"), meta.RESTScopeNamespace)
	}
	return m
}

// poke makes follow read the assignments at once.
func (a *Agent) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// every runs f now and every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// clusterLabels is the runtime's ClusterLabels: the labels the hub
// assigned (every assignment carries them).
func (a *Agent) clusterLabels(_ multicluster.ClusterName) map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.graphs {
		return s.spec.Cluster.Labels
	}
	return nil
}

// clusterValues is the runtime's ClusterValues: the graph's values as
// assigned.
func (a *Agent) clusterValues(_ multicluster.ClusterName, graphName string) map[string]any {
	a.mu.Lock()
	s := a.graphs[graphName]
	a.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.values
}
