package pull

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// The defaults of Options' fields.
const (
	// DefaultHeartbeatGrace is how long an agent may go without renewing
	// its Lease before its cluster is shown Unreachable.
	DefaultHeartbeatGrace = 40 * time.Second
	// DefaultResync is how often every pull cluster's assignments are
	// decided again even when nothing said they changed.
	DefaultResync = 2 * time.Second
	// DefaultDepartureTimeout bounds how long a deleted PullCluster waits
	// for its agent to release its instances.
	DefaultDepartureTimeout = 2 * time.Minute
	// DefaultWorkers is how many pull clusters are written to at once.
	DefaultWorkers = 4
)

// Options configures a Source.
type Options struct {
	// Config reaches the hub cluster. Required.
	Config *rest.Config
	// Fleet is the hub that decides. Required.
	Fleet Fleet
	// FieldManager writes every object. Defaults to "fleetgraph".
	FieldManager string
	// HeartbeatGrace: see DefaultHeartbeatGrace. A PullCluster's
	// spec.heartbeatGraceSeconds replaces it for that cluster.
	HeartbeatGrace time.Duration
	// Resync: see DefaultResync.
	Resync time.Duration
	// DepartureTimeout: see DefaultDepartureTimeout.
	DepartureTimeout time.Duration
	// Workers: see DefaultWorkers.
	Workers int
	// Logger defaults to controller-runtime's log.Log named "pull".
	Logger logr.Logger
}

func (o Options) withDefaults() Options {
	if o.FieldManager == "" {
		o.FieldManager = v1alpha1.FieldManager
	}
	if o.HeartbeatGrace <= 0 {
		o.HeartbeatGrace = DefaultHeartbeatGrace
	}
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.DepartureTimeout <= 0 {
		o.DepartureTimeout = DefaultDepartureTimeout
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("pull")
	}
	return o
}

// Cluster is a pull cluster as the hub decides for it.
type Cluster struct {
	// Name is the PullCluster's name.
	Name string
	// Labels are the PullCluster's labels.
	Labels map[string]string
}

// Fleet is what a Source asks the hub it serves. The sdk's Hub
// implements it.
type Fleet interface {
	// Plan returns what the hub decides now; the Source uses one Plan for
	// a pass over several clusters, and asks for a new one after Poke.
	Plan(ctx context.Context) Plan
	// Changed is told, without blocking, of a graph whose state on some
	// pull cluster changed (a report, a heartbeat).
	Changed(graph string)
}

// Plan decides what pull clusters should serve.
type Plan interface {
	// Assign returns the assignment of each graph the cluster should
	// have, by graph name, given those it has (have) and its agent's
	// reports (by graph name; a graph may have either or neither). A
	// graph the result leaves out loses its assignment; a graph the hub
	// does not know must be returned as it is, so that it is kept. Only
	// the spec counts: the Source writes an assignment when its spec
	// differs.
	Assign(c Cluster, have map[string]*fgv1alpha1.GraphAssignment, reports map[string]*fgv1alpha1.GraphReport) map[string]fgv1alpha1.GraphAssignmentSpec
}

// Source serves the hub's pull clusters: it registers each PullCluster,
// publishes what the hub assigns it, reads what its agent reports, and
// cleans up after a deleted one. Add it to the hub's manager; its
// accessors are safe for concurrent use and answer from memory.
type Source struct {
	opts   Options
	scheme *runtime.Scheme

	caches atomic.Pointer[hubCache] // cache.go
	client client.Client            // live, for writes
	queue  workqueue.TypedRateLimitingInterface[string]
	beats  heartbeats // heartbeat.go
	plans  planCache
	synced chan struct{}

	mu         sync.Mutex
	registered map[string]bool      // clusters whose objects on the hub exist (by name)
	departing  map[string]time.Time // when each deleted cluster's departure began
}

var (
	_ manager.Runnable               = &Source{}
	_ manager.LeaderElectionRunnable = &Source{}
)

// New returns a Source. It does nothing until started.
func New(opts Options) (*Source, error) {
	opts = opts.withDefaults()
	if opts.Config == nil || opts.Fleet == nil {
		return nil, errors.New("pull: a Source needs a Config and a Fleet")
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	s := &Source{
		opts: opts, scheme: scheme, synced: make(chan struct{}),
		registered: map[string]bool{}, departing: map[string]time.Time{},
	}
	s.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "pull"})
	s.beats.grace = opts.HeartbeatGrace
	s.plans.fleet = opts.Fleet
	return s, nil
}

// Scheme is the scheme of the objects a Source and an agent use on the
// hub.
func Scheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		fgv1alpha1.AddToScheme, corev1.AddToScheme, rbacv1.AddToScheme,
		coordinationv1.AddToScheme, apiextensionsv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("pull: building the scheme: %w", err)
		}
	}
	return scheme, nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: one
// replica writes for the pull clusters.
func (s *Source) NeedLeaderElection() bool { return true }

// Synced is closed once the Source has read the hub's pull objects.
func (s *Source) Synced() <-chan struct{} { return s.synced }

// Start installs the CRDs and the agents' ClusterRole, reads the pull
// objects and serves the pull clusters until ctx ends.
func (s *Source) Start(ctx context.Context) error {
	c, err := client.New(s.opts.Config, client.Options{Scheme: s.scheme})
	if err != nil {
		return fmt.Errorf("pull: a client for the hub: %w", err)
	}
	s.client = c
	defer s.queue.ShutDown()
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	if err := s.install(ctx); err != nil { // register.go
		return err
	}
	hc, err := s.newCache(ctx) // cache.go
	if err != nil {
		return err
	}
	s.caches.Store(hc)
	close(s.synced)
	var wg sync.WaitGroup
	wg.Go(func() {
		s.beats.probe(ctx, s.opts.Config, s.opts.Logger, s.heartbeatChanged, func() { s.refresh(ctx) })
	})
	wg.Go(func() { s.resync(ctx) })
	for range s.opts.Workers {
		wg.Go(func() { s.work(ctx) })
	}
	wg.Wait()
	return nil
}

// clusterOf is a PullCluster's name.
func (s *Source) clusterOf(obj client.Object) string { return obj.GetName() }

// namespaceCluster is the pull cluster whose namespace holds obj; "" for
// any other namespace.
func (s *Source) namespaceCluster(obj client.Object) string {
	name, ok := strings.CutPrefix(obj.GetNamespace(), fgv1alpha1.PullNamespacePrefix)
	if !ok {
		return ""
	}
	return name
}

// onObject enqueues the cluster of every object event.
func (s *Source) onObject(cluster func(client.Object) string) toolscache.ResourceEventHandler {
	enqueue := func(obj any) {
		if o, ok := objectOf(obj); ok {
			if name := cluster(o); name != "" {
				s.plans.invalidate() // a label may have changed
				s.queue.Add(name)
			}
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

// onReport enqueues a report's cluster (its fallback and removals read
// reports) and tells the hub its graph's state changed there.
func (s *Source) onReport() toolscache.ResourceEventHandler {
	changed := func(obj any) {
		o, ok := objectOf(obj)
		if !ok {
			return
		}
		if name := s.namespaceCluster(o); name != "" {
			s.queue.Add(name)
			s.opts.Fleet.Changed(o.GetName())
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: changed,
	}
}

// onLease records each renewal of an agent's Lease, by the hub's clock.
func (s *Source) onLease() toolscache.ResourceEventHandler {
	seen := func(obj any) {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok {
			return
		}
		if name := s.namespaceCluster(l); name != "" {
			var renew time.Time
			if l.Spec.RenewTime != nil {
				renew = l.Spec.RenewTime.Time
			}
			s.beats.seen(name, renew, time.Now())
			s.heartbeatChanged(name)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	}
}

// heartbeatChanged tells the hub of every graph assigned to the cluster
// when its agent's availability changed.
func (s *Source) heartbeatChanged(cluster string) {
	if !s.beats.flipped(cluster) {
		return
	}
	s.queue.Add(cluster)
	for _, a := range s.assignments(context.Background(), cluster) {
		s.opts.Fleet.Changed(a.Name)
	}
}

func objectOf(obj any) (client.Object, bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(client.Object)
	return o, ok
}

// Poke makes the Source decide every pull cluster's assignments again at
// once: something the decisions depend on changed (a graph registered, a
// rollout moved).
func (s *Source) Poke() {
	s.plans.invalidate()
	for _, name := range s.clusterNames() {
		s.queue.Add(name)
	}
}

// resync enqueues every pull cluster every Resync.
func (s *Source) resync(ctx context.Context) {
	t := time.NewTicker(s.opts.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		names := s.clusterNames()
		pullClusters.Set(float64(len(names)))
		for _, name := range names {
			s.queue.Add(name)
		}
	}
}

// work reconciles the clusters of the queue until it shuts down.
func (s *Source) work(ctx context.Context) {
	for {
		name, shutdown := s.queue.Get()
		if shutdown {
			return
		}
		err := s.reconcile(ctx, name)
		switch {
		case err == nil:
			s.queue.Forget(name)
		case ctx.Err() != nil:
		default:
			s.opts.Logger.Info("pull cluster not reconciled; retrying", "cluster", name, "reason", err.Error())
			s.queue.AddRateLimited(name)
		}
		s.queue.Done(name)
	}
}

// reconcile brings one pull cluster's objects on the hub where the hub
// wants them: registered, its assignments what the hub decides, or, once
// its PullCluster is being deleted, cleaned up after.
func (s *Source) reconcile(ctx context.Context, name string) error {
	pc := &fgv1alpha1.PullCluster{}
	if err := s.reader().Get(ctx, client.ObjectKey{Name: name}, pc); err != nil {
		s.forget(name)
		return client.IgnoreNotFound(err)
	}
	if !pc.DeletionTimestamp.IsZero() {
		return s.depart(ctx, pc) // depart.go
	}
	if err := s.register(ctx, pc); err != nil { // register.go
		return err
	}
	if err := s.assign(ctx, pc); err != nil { // assign.go
		return err
	}
	return s.writeStatus(ctx, pc) // register.go
}

// forget drops what the Source remembers of a cluster that is gone.
func (s *Source) forget(name string) {
	s.mu.Lock()
	delete(s.registered, name)
	delete(s.departing, name)
	s.mu.Unlock()
	s.beats.forget(name)
}

// planCache holds the Plan of the current pass, so that a pass over many
// clusters decides each graph once; it is dropped after Poke, on a
// PullCluster change and after planTTL.
type planCache struct {
	fleet Fleet
	mu    sync.Mutex
	plan  Plan
	at    time.Time
}

// planTTL bounds how long one Plan is used.
const planTTL = 500 * time.Millisecond

func (p *planCache) get(ctx context.Context) Plan {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.plan == nil || time.Since(p.at) > planTTL {
		p.plan, p.at = p.fleet.Plan(ctx), time.Now()
	}
	return p.plan
}

func (p *planCache) invalidate() {
	p.mu.Lock()
	p.plan = nil
	p.mu.Unlock()
}
