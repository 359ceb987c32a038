package clustervalues

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/internal/crds"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// DefaultResync is how often, by default, the statuses are looked at again
// without a change to any object (clusters come and go, and are
// relabelled).
const DefaultResync = 10 * time.Second

// Options configure a Controller.
type Options struct {
	// Config reaches the hub cluster.
	Config *rest.Config
	// Store receives the accepted objects.
	Store *Store
	// Notify is called after every change of the objects (the runtime's
	// ClusterValuesChanged).
	Notify func()
	// Clusters returns the engaged clusters' labels, by name, for status.
	Clusters func() map[string]map[string]string
	// FieldManager installs the CRD.
	FieldManager string
	// Resync is how often statuses are looked at again. Defaults to
	// DefaultResync.
	Resync time.Duration
	Logger logr.Logger
}

// Controller keeps Options.Store current from the hub's ClusterValues
// objects and writes their status. Start runs on every hub replica (each
// serves clusters that read the values); only the replica whose
// StatusWriter runs (leader-elected) writes status.
type Controller struct {
	opts    Options
	synced  atomic.Bool
	syncedC chan struct{}
	leader  atomic.Bool
	kick    chan struct{}
}

var (
	_ manager.Runnable               = &Controller{}
	_ manager.LeaderElectionRunnable = &Controller{}
)

// New returns a Controller with opts' defaults filled in.
func New(opts Options) *Controller {
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	return &Controller{opts: opts, syncedC: make(chan struct{}), kick: make(chan struct{}, 1)}
}

// NeedLeaderElection is false: every replica needs the values.
func (c *Controller) NeedLeaderElection() bool { return false }

// Synced is closed once the objects were read the first time.
func (c *Controller) Synced() <-chan struct{} { return c.syncedC }

// StatusWriter returns a leader-elected runnable: while it runs, this
// replica writes the objects' status.
func (c *Controller) StatusWriter() manager.Runnable { return statusWriter{c} }

type statusWriter struct{ c *Controller }

var _ manager.LeaderElectionRunnable = statusWriter{}

func (w statusWriter) NeedLeaderElection() bool { return true }

func (w statusWriter) Start(ctx context.Context) error {
	w.c.leader.Store(true)
	w.c.trigger()
	<-ctx.Done()
	w.c.leader.Store(false)
	return nil
}

// Changed makes the controller look at the objects and their status again
// soon (a cluster was relabelled, say). It never blocks.
func (c *Controller) Changed() { c.trigger() }

func (c *Controller) trigger() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Start installs the CRD, watches the objects and keeps Store current
// until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	scheme := runtime.NewScheme()
	if err := fgv1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("clustervalues scheme: %w", err)
	}
	cl, err := client.New(c.opts.Config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client for the hub: %w", err)
	}
	if !c.install(ctx, cl) {
		return nil
	}
	informers, err := cache.New(c.opts.Config, cache.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("cache for ClusterValues: %w", err)
	}
	inf, err := informers.GetInformer(ctx, &fgv1alpha1.ClusterValues{})
	if err != nil {
		return fmt.Errorf("watching ClusterValues: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.trigger() },
		UpdateFunc: func(_, _ any) { c.trigger() },
		DeleteFunc: func(any) { c.trigger() },
	}); err != nil {
		return fmt.Errorf("watching ClusterValues: %w", err)
	}
	go func() {
		if err := informers.Start(ctx); err != nil && ctx.Err() == nil {
			c.opts.Logger.Error(err, "ClusterValues informer stopped")
		}
	}()
	if !informers.WaitForCacheSync(ctx) {
		return nil
	}
	t := time.NewTicker(c.opts.Resync)
	defer t.Stop()
	for {
		c.sync(ctx, informers, cl)
		select {
		case <-ctx.Done():
			return nil
		case <-c.kick:
		case <-t.C:
		}
	}
}

// install puts the CRD on the hub, retrying with backoff; false when ctx
// ended first.
func (c *Controller) install(ctx context.Context, cl client.Client) bool {
	for delay := time.Second; ; delay = min(2*delay, 30*time.Second) {
		err := crds.Install(ctx, cl, fgv1alpha1.ClusterValuesCRD(), c.opts.FieldManager)
		if err == nil {
			return true
		}
		if errors.Is(err, crds.ErrNotOurs) {
			// Another installer's CRD of the same name: use it as it is.
			return true
		}
		c.opts.Logger.Error(err, "installing the ClusterValues CRD; retrying", "retry", delay)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(delay):
		}
	}
}

// sync rebuilds Store from the cache, tells Notify, and writes the status
// when this replica is the leader.
func (c *Controller) sync(ctx context.Context, r client.Reader, w client.Client) {
	var list fgv1alpha1.ClusterValuesList
	if err := r.List(ctx, &list); err != nil {
		c.opts.Logger.Error(err, "listing ClusterValues")
		return
	}
	changed := c.opts.Store.Changed(list.Items)
	verdicts := c.opts.Store.Set(list.Items)
	if c.synced.CompareAndSwap(false, true) {
		close(c.syncedC)
	}
	if changed {
		// Only a spec change: the status writes and the resyncs change no
		// values.
		c.opts.Notify()
	}
	if !c.leader.Load() {
		return
	}
	reports := c.opts.Store.Report(c.opts.Clusters())
	for i := range list.Items {
		cv := &list.Items[i]
		if err := c.writeStatus(ctx, w, cv, verdicts[cv.Name], reports[cv.Name]); err != nil && ctx.Err() == nil {
			c.opts.Logger.V(1).Info("writing ClusterValues status; retrying", "name", cv.Name, "reason", err.Error())
		}
	}
}

func (c *Controller) writeStatus(ctx context.Context, w client.Client, cv *fgv1alpha1.ClusterValues, v Verdict, r *Report) error {
	st := *cv.Status.DeepCopy()
	st.ObservedGeneration = cv.Generation
	st.Clusters = 0
	accepted := metav1.Condition{Type: fgv1alpha1.ClusterValuesAccepted, Status: metav1.ConditionTrue, Reason: v.Reason, Message: v.Message, ObservedGeneration: cv.Generation}
	conflict := metav1.Condition{Type: fgv1alpha1.ClusterValuesConflict, Status: metav1.ConditionFalse, Reason: fgv1alpha1.ReasonNoConflict,
		Message: "no object of the same rank overrides a key", ObservedGeneration: cv.Generation}
	if !v.Accepted() {
		accepted.Status = metav1.ConditionFalse
		meta.RemoveStatusCondition(&st.Conditions, fgv1alpha1.ClusterValuesConflict)
	} else if r != nil {
		st.Clusters = r.Clusters
		if len(r.Conflicts) > 0 {
			conflict.Status, conflict.Reason, conflict.Message = metav1.ConditionTrue, fgv1alpha1.ReasonOverridden, r.Message()
		}
	}
	meta.SetStatusCondition(&st.Conditions, accepted)
	if v.Accepted() {
		meta.SetStatusCondition(&st.Conditions, conflict)
	}
	if equality.Semantic.DeepEqual(st, cv.Status) {
		return nil
	}
	cv = cv.DeepCopy()
	cv.Status = st
	return w.Status().Update(ctx, cv)
}
