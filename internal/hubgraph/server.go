package hubgraph

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/spoke/fair"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// server is one hub graph served: its CRD on the hub and the controller
// of its instances. Each concern of a reconcile is a part of its own, made
// once by newServer: targets (targets.go), evaluation (evaluate.go),
// writes (apply.go), pruning (prune.go), deletion (finalize.go), status
// (status.go), the watches of the children in the target clusters
// (watches.go) and those of what external references read
// (external_refs.go).
type server struct {
	rt  *Runtime
	g   *graph.Graph
	seq int
	log logr.Logger

	// Set by start, before the controller runs, and only read afterwards.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// owner names this graph's children; run sets its hub.
	owner owner
	// events carries requeues of hub instances from the children's
	// watches (watches.go) to the controller.
	events chan event.GenericEvent
	// instances maps each instance's UID to its key, for children whose
	// name labels were shortened. A sync.Map: reconciles store, the
	// finalizer deletes, and the watches' handlers load concurrently.
	instances sync.Map
	// writes remembers our own latest write of each instance
	// (instance_writes.go).
	writes *ownWrites
	// removal is set once the graph is being removed (removal.go).
	removal atomic.Pointer[removalMode]
	// retries are the controller's fair queue's (fair.go), set when the
	// controller makes its queue.
	retries atomic.Pointer[fair.Retries]
	// stamp is when the graph's admission policy went off the hub
	// (stamp.go).
	stamp stamping
	// fleetNotices tells a graph that reads the fleet variable to look at
	// the fleet now (fleet.go); it holds one notice at most.
	fleetNotices chan struct{}

	// The parts, made by newServer and never replaced.
	watches   *watchSet
	externals *externals
	targets   *targets
	eval      *evaluator
	pruner    *pruner
	status    *reporter
	finalizer *finalizer
}

func newServer(rt *Runtime, g *graph.Graph, seq int) *server {
	s := &server{
		rt: rt, g: g, seq: seq,
		log:    rt.opts.Logger.WithValues("graph", g.Name),
		owner:  owner{graph: contract.LabelValue(g.Name)},
		events: make(chan event.GenericEvent, 1024),
		writes: newOwnWrites(),

		fleetNotices: make(chan struct{}, 1),
	}
	s.watches = newWatchSet(&s.owner, newApplyMemory(rt.opts.Resync), &s.instances, s.enqueue)
	s.targets = &targets{rt: rt, g: g}
	s.externals = newExternals(rt.opts.Clusters, s.enqueue)
	s.eval = &evaluator{rt: rt, g: g, apply: newApplier(rt, g, &s.owner, s.watches), refs: s.externals}
	s.pruner = &pruner{rt: rt, g: g, owner: &s.owner, watches: s.watches}
	s.status = &reporter{rt: rt, g: g, writes: s.writes}
	s.finalizer = &finalizer{rt: rt, g: g, prune: s.pruner, report: s.status, instances: &s.instances}
	return s
}

// start runs the server in the background until ctx ends or stop.
func (s *server) start(ctx context.Context) {
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.watches.ctx = s.ctx
	s.externals.ctx = s.ctx
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.run(s.ctx); err != nil && s.ctx.Err() == nil {
			s.log.Error(err, "serving hub graph stopped")
		}
	}()
}

// stop ends the server and removes its watches' handlers.
func (s *server) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.watches.removeAll()
	s.externals.removeAll()
}

// run applies the CRD on the hub, has its admission policy bound there
// (stamp.go), then runs the instances' controller.
func (s *server) run(ctx context.Context) error {
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		name, err := s.rt.identity(ctx)
		if err == nil {
			s.owner.hub = name
			err = s.ensureCRD(ctx)
		}
		if err != nil {
			s.log.Info("hub graph's CRD not ready on the hub yet", "error", err.Error())
		}
		return err == nil, nil
	}); err != nil {
		return err
	}
	s.install(ctx) // stamp.go
	c, err := controller.NewTypedUnmanaged(fmt.Sprintf("hubgraph-%s-%d", s.g.Name, s.seq), controller.Options{
		Reconciler:              s,
		MaxConcurrentReconciles: s.rt.opts.Workers,
		NewQueue:                s.newQueue, // fair.go
		SkipNameValidation:      ptr.To(true),
		NeedLeaderElection:      ptr.To(false),
		Logger:                  s.log,
	})
	if err != nil {
		return fmt.Errorf("making the controller of hub graph %s: %w", s.g.Name, err)
	}
	inst := &unstructured.Unstructured{}
	inst.SetGroupVersionKind(s.g.Instance.GVK)
	if err := c.Watch(source.Kind[client.Object](s.rt.hub().GetCache(), inst, instanceHandler{writes: s.writes, changed: s.countsChanged()})); err != nil {
		return err
	}
	if err := c.Watch(source.Channel(s.events, &handler.EnqueueRequestForObject{})); err != nil {
		return err
	}
	go s.externals.sweep(ctx) // external_watch.go
	if s.g.UsesFleet() {
		go watchFleet(ctx, s.rt.opts.Clusters, s.rt.opts.FleetPoll, s.fleetNotices, s.requeueAll) // fleet.go
	}
	return c.Start(ctx)
}

// ensureCRD applies the graph's CRD on the hub and waits until it is
// established.
func (s *server) ensureCRD(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, s.rt.opts.CallTimeout)
	defer cancel()
	crd := s.g.CRD.DeepCopy()
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	crd.ResourceVersion, crd.ManagedFields = "", nil
	labels := crd.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[contract.LabelManagedBy] = contract.ManagedBy
	crd.SetLabels(labels)
	u, err := toUnstructured(crd)
	if err != nil {
		return err
	}
	hc := s.rt.hub().GetClient()
	if err := hc.Apply(cctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(s.rt.opts.FieldManager)); err != nil {
		return fmt.Errorf("applying CRD %s on the hub: %w", crd.Name, err)
	}
	// Read back as unstructured: the embedder's scheme need not know
	// apiextensions' types.
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := s.rt.hub().GetAPIReader().Get(cctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
		return err
	}
	if established(got) {
		return nil
	}
	return fmt.Errorf("CRD %s is not established yet", crd.Name)
}

// established reports whether crd's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == string(apiextensionsv1.Established) && m["status"] == string(apiextensionsv1.ConditionTrue) {
			return true
		}
	}
	return false
}

// enqueue requeues the hub instance key.
func (s *server) enqueue(key types.NamespacedName) {
	u := &unstructured.Unstructured{}
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	select {
	case s.events <- event.GenericEvent{Object: u}:
	case <-s.ctx.Done():
	}
}

var _ reconcile.Reconciler = &server{}
