package hubgraph

import (
	"context"
	"fmt"
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
	"github.com/fleetgraph/fleetgraph/internal/crdschema"
	"github.com/fleetgraph/fleetgraph/internal/fair"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// server is one hub graph served: its CRD on the hub and the controller
// of its instances, the driver of an instance engine (package instance)
// whose instances live on the hub and whose nodes live where their
// targets say. What is the driver's own is a part of its own: targets
// (targets.go), the clusters recorded on each instance (reconcile.go),
// the admission stamp (stamp.go), the fleet variable (fleet.go), removal
// (removal.go) and the instance watch (instances.go).
type server struct {
	rt  *Runtime
	g   *graph.Graph
	seq int
	log logr.Logger

	// Set by start, before the controller runs, and only read afterwards.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// engine evaluates, writes, prunes, deletes and collects the graph's
	// instances; run makes it once the hub's identity is known, before
	// the controller starts.
	engine atomic.Pointer[instance.Engine]
	// listed is set once the hub's cache lists the instances.
	listed atomic.Bool
	// events carries requeues of hub instances from the engine (its
	// children's and references' watches) to the controller.
	events chan event.GenericEvent
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

	targets *targets
}

func newServer(rt *Runtime, g *graph.Graph, seq int) *server {
	return &server{
		rt: rt, g: g, seq: seq,
		log:          rt.opts.Instances.Logger.WithValues("graph", g.Name),
		events:       make(chan event.GenericEvent, 1024),
		fleetNotices: make(chan struct{}, 1),
		targets:      &targets{rt: rt, g: g},
	}
}

// start runs the server in the background until ctx ends or stop.
func (s *server) start(ctx context.Context) {
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.run(s.ctx); err != nil && s.ctx.Err() == nil {
			s.log.Error(err, "serving hub graph stopped")
		}
	}()
}

// stop ends the server: its engine's watches' handlers are removed.
func (s *server) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	if e := s.engine.Load(); e != nil {
		e.Stop()
	}
}

// run applies the CRD on the hub, has its admission policy bound there
// (stamp.go), makes the engine, then runs the instances' controller.
func (s *server) run(ctx context.Context) error {
	var hubName string
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		name, err := s.rt.identity(ctx)
		if err == nil {
			hubName = name
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
	e := s.newEngine(ctx, hubName)
	c, err := controller.NewTypedUnmanaged(fmt.Sprintf("hubgraph-%s-%d", s.g.Name, s.seq), controller.Options{
		Reconciler:              s,
		MaxConcurrentReconciles: s.rt.opts.Instances.Workers,
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
	if err := c.Watch(source.Kind[client.Object](s.rt.hub().GetCache(), inst, instanceHandler{e: e, changed: s.countsChanged()})); err != nil {
		return err
	}
	if err := c.Watch(source.Channel(s.events, &handler.EnqueueRequestForObject{})); err != nil {
		return err
	}
	go s.follow(ctx, inst) // instances.go
	if s.g.UsesFleet() {
		visible := (&targets{rt: s.rt, g: s.g}).visible(ctx, nil)
		go watchFleet(ctx, s.rt.opts.Clusters, visible, s.rt.opts.FleetPoll, s.fleetNotices, s.requeueAll) // fleet.go
	}
	return c.Start(ctx)
}

// newEngine makes the graph's engine: instances on the hub, children
// labelled with the hub's identity.
func (s *server) newEngine(ctx context.Context, hubName string) *instance.Engine {
	e := instance.New(instance.Config{
		Graph:        s.g,
		Options:      s.rt.opts.Instances,
		Home:         s.rt.handle("", s.rt.hub()),
		Context:      ctx,
		Enqueue:      s.enqueue,
		OwnerLabels:  map[string]string{LabelHub: hubName},
		DeletionPoll: waitingRequeue,
		AbandonAfter: s.rt.opts.AbandonAfter,
		Defaults:     crdschema.StorageSchema(s.g.CRD),
		InstancesListed: func() bool {
			return s.listed.Load()
		},
		Released: func() bool {
			mode := s.removal.Load()
			return mode != nil && mode.release
		},
		WatchHealthChanged: s.requeueAll,
	})
	s.engine.Store(e)
	return e
}

// ensureCRD applies the graph's CRD on the hub and waits until it is
// established.
func (s *server) ensureCRD(ctx context.Context) error {
	cctx, cancel := s.rt.callCtx(ctx)
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
	if err := hc.Apply(cctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(s.rt.opts.Instances.FieldManager)); err != nil {
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
