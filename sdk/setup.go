package sdk

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/crds"
	rgdctrl "github.com/fleetgraph/fleetgraph/internal/rgd"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// SetupWithManager embeds the Hub in mgr: the instance runtime is engaged
// with every cluster mgr's provider (mgr.GetProvider()) engages, or, when
// mgr has none, with mgr's own cluster; and the RGD controller runs on mgr's
// own (hub) cluster unless disabled. Call it before mgr.Start, once.
//
// A provider given to NewHub must be mgr's (else ErrProviderMismatch). A
// Hub with a provider that has engaged no cluster 30 seconds after the
// start logs a warning: a provider that needs its own setup call
// (secret.Provider.SetupWithManager) was likely not set up.
//
// SetupWithManager does no network I/O: installing the RGD CRD
// (Options.RGDs.InstallCRD) and checking that the hub serves RGDs run when
// mgr starts, with its context, and an install failure ends mgr.Start with
// that error.
func (h *Hub) SetupWithManager(mgr mcmanager.Manager) error {
	provider, err := resolveProvider(h.provider, mgr)
	if err != nil {
		return err
	}
	registered, err := h.setManager(mgr, func() bool {
		if h.provider != nil || provider == nil {
			return false
		}
		// Known only now (the manager's): the fan-out asks it for its
		// engagement failures and whether it publishes (fanout.go).
		// Nothing has reached the clusters yet.
		h.provider = provider
		h.fanOut = h.newFanOut(provider)
		return true
	})
	if err != nil {
		return err
	}
	for _, v := range registered { // registered before the provider was known
		h.fanOut.Publish(h.hubGraph(v.Graph, v.Revision))
	}

	local := mgr.GetLocalManager()
	applyControllerOptions(h.runtime, h.workersSet, local)
	if err := h.setupResolver(h.opts, local.GetConfig()); err != nil {
		return err
	}
	// Order matters: the multicluster manager engages in the order
	// runnables were added, and the gate needs the cluster to be known
	// first.
	if err := h.clusterSource.addAware(mgr); err != nil {
		return err
	}
	if err := local.Add(h.hubGraphs); err != nil {
		return fmt.Errorf("adding the hub graphs' runtime: %w", err)
	}
	if err := h.remover.addStopper(local); err != nil {
		return err
	}
	if err := h.addProber(mgr); err != nil {
		return err
	}
	if err := h.versions.setup(local); err != nil {
		return err
	}
	if err := h.rollouts.setup(local); err != nil {
		return err
	}
	if err := h.values.setup(local); err != nil { // cluster_values.go
		return err
	}
	if err := h.pull.setup(local); err != nil { // pull.go
		return err
	}
	h.clusterSource.followLabelNotices() // cluster_labels.go
	if err := h.clusterSource.setup(mgr); err != nil {
		return err
	}
	return setupRGDController(h, local)
}

// setupRGDController adds, unless disabled, a runnable that starts the RGD
// controller once the manager runs: deciding whether to run it needs the
// hub cluster (the CRD installed, the kind served), and SetupWithManager
// does no I/O.
func setupRGDController(h *Hub, local manager.Manager) error {
	if h.opts.RGDs.DisableController {
		return nil
	}
	rgds, err := rgdCluster(local)
	if err != nil {
		return err
	}
	if err := local.Add(rgdStarter{h: h, local: local, rgds: rgds}); err != nil {
		return fmt.Errorf("adding the RGD controller's starter: %w", err)
	}
	return nil
}

// rgdCluster is what the RGD controller reads, watches and writes RGDs
// through: the manager's own cluster when its scheme knows the RGD types
// (the embedder registered them), else a cluster of its own on the hub with
// a scheme of its own, added to the manager, which starts it with its caches.
//
// The manager's scheme is never written: it is client-go's process-wide
// one unless the embedder gave another, and adding types to a scheme
// races with every client decoding through it (any other manager in the
// process).
func rgdCluster(local manager.Manager) (cluster.Cluster, error) {
	if local.GetScheme().Recognizes(v1alpha1.GroupVersion.WithKind("ResourceGraphDefinition")) {
		return local, nil
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the RGD controller's scheme: %w", err)
	}
	rgds, err := cluster.New(local.GetConfig(), func(o *cluster.Options) {
		o.Scheme = scheme
		o.Logger = local.GetLogger()
		o.HTTPClient = local.GetHTTPClient()
		o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			return local.GetRESTMapper(), nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("a client for the RGD controller: %w", err)
	}
	if err := local.Add(rgds); err != nil {
		return nil, fmt.Errorf("adding the RGD controller's client: %w", err)
	}
	return rgds, nil
}

// runScheme is the scheme of the manager Hub.Run makes: client-go's types,
// the RGD types and fleetgraph's hub types (GraphRevision, GraphRollout,
// ClusterValues), in a scheme of its own.
func runScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for name, add := range map[string]func(*runtime.Scheme) error{
		"client-go's types": clientgoscheme.AddToScheme,
		"the RGD types":     v1alpha1.AddToScheme,
		"the hub types":     fgv1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the hub's scheme, %s: %w", name, err)
		}
	}
	return scheme, nil
}

// rgdStarter installs the RGD CRD if asked, then adds the RGD controller to
// the running manager if the hub serves the kind. It runs on every replica
// (the install is idempotent); the controller it adds is leader-elected.
type rgdStarter struct {
	h     *Hub
	local manager.Manager
	rgds  cluster.Cluster // rgdCluster's
}

var (
	_ manager.Runnable               = rgdStarter{}
	_ manager.LeaderElectionRunnable = rgdStarter{}
)

func (s rgdStarter) NeedLeaderElection() bool { return false }

// Start returns the install's error, which stops the manager: a hub that was
// asked to install its API and could not would otherwise serve no RGD
// without a word.
func (s rgdStarter) Start(ctx context.Context) error {
	h := s.h
	if h.opts.RGDs.InstallCRD {
		if err := installRGDCRD(ctx, s.local, h.opts); err != nil {
			return err
		}
	}
	if !servesRGDs(ctx, s.local, h.opts.RGDs.InstallCRD) {
		h.opts.Logger.Info("RGD controller off: the hub cluster does not serve " +
			"kro.run/v1alpha1 ResourceGraphDefinition (set Options.RGDs.InstallCRD to install it)")
		return nil
	}
	if err := h.sharding.setup(s.local); err != nil {
		return err
	}
	r := &rgdctrl.Reconciler{
		Client:    s.rgds.GetClient(),
		APIReader: s.rgds.GetAPIReader(),
		Registry:  rgdRegistry{h},
		Recorder:  h.recorder,
		Selector:  h.opts.RGDs.Selector,
		Resync:    h.opts.Fleet.StatusResync,
		Changed:   h.changed,
	}
	if s.rgds != cluster.Cluster(s.local) {
		r.Cache = s.rgds.GetCache()
		r.Recorder = s.rgds.GetEventRecorder("fleetgraph")
	}
	if err := r.SetupWithManager(s.local); err != nil && ctx.Err() == nil {
		return fmt.Errorf("starting the RGD controller: %w", err)
	}
	return nil
}

// servesRGDs reports whether the hub serves the RGD kind. Right after the
// CRD was installed, discovery lags its Established condition by a few
// seconds, so then it asks again until rgdDiscoveryWait has passed.
func servesRGDs(ctx context.Context, local manager.Manager, installed bool) bool {
	gvk := v1alpha1.GroupVersion.WithKind("ResourceGraphDefinition")
	served := func(context.Context) (bool, error) {
		_, err := local.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil, nil
	}
	if !installed {
		ok, _ := served(ctx)
		return ok
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, rgdDiscoveryWait, true, served) == nil
}

// rgdDiscoveryWait bounds how long the hub waits for discovery to list the
// RGD kind after installing its CRD.
const rgdDiscoveryWait = 30 * time.Second

// installRGDCRD creates or updates the RGD CRD with a direct client (the
// manager's cache need not know CRDs); ctx is the manager's. A CRD that another manager installed
// (kro's, say) is left alone: it is logged, and the RGD controller serves
// the kind as that CRD defines it.
func installRGDCRD(ctx context.Context, local manager.Manager, opts Options) error {
	crd, err := v1alpha1.CRD()
	if err != nil {
		return err
	}
	// A scheme of its own: the manager's (client-go's global one by
	// default) need not know CRDs, and a process that never imported
	// apiextensions must still be able to read one.
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building the CRD scheme: %w", err)
	}
	c, err := client.New(local.GetConfig(), client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client for the hub: %w", err)
	}
	existing := &apiextensionsv1.CustomResourceDefinition{}
	switch err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, existing); {
	case err == nil && !installedByUs(existing, opts.Instances.FieldManager):
		opts.Logger.Info("not installing the ResourceGraphDefinition CRD: another manager owns the one on the hub",
			"crd", crd.Name, "managers", managers(existing))
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading the ResourceGraphDefinition CRD: %w", err)
	}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	crd.Labels = map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByFleetgraph}
	u, err := crds.ApplyObject(crd)
	if err != nil {
		return err
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(opts.Instances.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("installing the ResourceGraphDefinition CRD: %w", err)
	}
	_, err = crds.WaitEstablished(ctx, c, crd.Name, crds.PollInterval, crds.EstablishTimeout, crds.RequestTimeout)
	return err
}

// installedByUs reports whether fleetgraph installed crd: it carries our
// managed-by label, or every manager of its spec is our field manager (an
// install from before the label).
func installedByUs(crd *apiextensionsv1.CustomResourceDefinition, fieldManager string) bool {
	if crd.Labels[v1alpha1.LabelManagedBy] == v1alpha1.ManagedByFleetgraph {
		return true
	}
	if crd.Labels[v1alpha1.LabelManagedBy] != "" {
		return false
	}
	spec := 0
	for _, mf := range crd.ManagedFields {
		if mf.Subresource != "" {
			continue
		}
		spec++
		if mf.Manager != fieldManager {
			return false
		}
	}
	return spec > 0
}

func managers(obj metav1.Object) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Subresource == "" {
			out = append(out, mf.Manager)
		}
	}
	return out
}

// gate is the spoke runtime's Gate: before a graph is served on a cluster,
// its CRD is put there and established.
//
// A graph being removed is served where its CRD already is: nothing is
// applied, so its admission policy is not put back.
func (c *crdFanOut) gate(ctx context.Context, name multicluster.ClusterName, v spoke.Version) error {
	if v.Removal != "" {
		return nil
	}
	if err := c.h.rollouts.gate(ctx, name, v); err != nil {
		return err
	}
	if err := c.h.values.gate(v); err != nil { // cluster_values.go
		return err
	}
	return c.ensure(ctx, string(name), v.Graph, v.Revision) // fanout.go
}

// onTransition puts an event on the RGD when a cluster cannot serve it or
// lost its CRD, and has the runtime count nothing there until it watches
// the instances afresh after a loss.
func (c *crdFanOut) onTransition(graphName, clusterName string, state hub.CRDState, msg string) {
	if state == hub.CRDMissing {
		// The instance watch there may not notice: the CRD may be back
		// before it lists again, or the cluster's state went back in time.
		c.h.runtime.CRDLost(graphName, multicluster.ClusterName(clusterName))
	}
	if state != hub.CRDConflict && state != hub.CRDIncompatible && state != hub.CRDMissing {
		return
	}
	target, rec := c.h.eventTarget(graphName)
	if target == nil || rec == nil {
		return
	}
	rec.Eventf(target, nil, "Warning", "CRD"+string(state), "FanOut", "cluster %q: %s", clusterName, msg)
}

var _ rgdctrl.Changes = &statusChanges{}

// statusChanges are the graphs whose RGD status the RGD controller is to
// rewrite soon (its Changed). Each graph waits once, however often it
// changes before the controller takes it, in the order of its first
// change: a burst of changes to every graph loses none, and holds one
// entry per graph.
type statusChanges struct {
	mu      sync.Mutex
	waiting map[string]struct{}
	order   []string
	ready   chan struct{} // one slot: the controller is to take
}

func newStatusChanges() *statusChanges {
	return &statusChanges{waiting: map[string]struct{}{}, ready: make(chan struct{}, 1)}
}

// notify asks the RGD controller to rewrite a graph's status soon. It
// never blocks.
func (c *statusChanges) notify(graphName string) {
	c.mu.Lock()
	if _, ok := c.waiting[graphName]; !ok {
		c.waiting[graphName] = struct{}{}
		c.order = append(c.order, graphName)
	}
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default: // a signal is pending already
	}
}

// Ready implements rgdctrl.Changes.
func (c *statusChanges) Ready() <-chan struct{} { return c.ready }

// Take implements rgdctrl.Changes.
func (c *statusChanges) Take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := c.order
	c.order = nil
	clear(c.waiting)
	return names
}

// clusterTracker records the clusters the manager engages, for the
// removals, rollouts and departures that reach them, and hands each one
// that is disengaged to departed. The fan-out keeps its own account of the
// clusters and of their fleet status (hub.FanOut.Engage).
type clusterTracker struct{ h *Hub }

var _ multicluster.Aware = clusterTracker{}

func (t clusterTracker) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	e := &engaged{name: string(name), cl: cl, ctx: ctx}
	t.h.engage(e)
	context.AfterFunc(ctx, func() {
		if t.h.disengage(e) {
			t.h.departures.departed(e)
		}
	})
	return nil
}

// Start lets the tracker be added to a manager, which is what engages it.
func (t clusterTracker) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}
