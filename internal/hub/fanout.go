package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

var (
	// ErrConflict: a CRD of the graph's name exists on the cluster and
	// fleetgraph does not own it. It is never overwritten.
	ErrConflict = errors.New("CRD exists and is not managed by fleetgraph")
	// ErrIncompatible: the cluster cannot serve the graph (a child kind is
	// not served there, or the new schema would break the served one).
	ErrIncompatible = errors.New("cluster cannot serve the graph")
)

const (
	// DefaultFieldManager is the server-side apply field manager.
	DefaultFieldManager = "fleetgraph"
	// DefaultEstablishTimeout bounds one wait for a CRD to be established.
	DefaultEstablishTimeout = 60 * time.Second
	// DefaultPollInterval is how often an applied CRD is checked for
	// Established.
	DefaultPollInterval = 10 * time.Millisecond
)

// FanOutOptions configures a FanOut. The zero value is usable.
type FanOutOptions struct {
	// FieldManager applies the CRDs. Defaults to DefaultFieldManager.
	FieldManager string
	// EstablishTimeout bounds one wait for Established; the caller retries
	// after it. Defaults to DefaultEstablishTimeout.
	EstablishTimeout time.Duration
	// PollInterval is how often Established is checked. Defaults to
	// DefaultPollInterval.
	PollInterval time.Duration
	// AllowBreaking reports whether the named graph opted in to breaking
	// schema changes. Defaults to never.
	AllowBreaking func(graph string) bool
	// OnTransition is called when a graph's CRD state on a cluster changes,
	// e.g. to emit an event. Defaults to nothing.
	OnTransition func(graph, cluster string, state CRDState, msg string)
	// SharedCheckTTL is how long a full Ensure of a graph on one API server
	// stands for the other clusters that reach that server with the same
	// identity (simulated clusters, namespaces or virtual clusters on one
	// server): within it each such cluster costs one metadata read of the
	// CRD, shared with the clusters that ask at the same moment, instead of
	// the whole Ensure (shared_ensure.go). Defaults to
	// DefaultSharedCheckTTL; negative checks every cluster on its own.
	SharedCheckTTL time.Duration
	// DisableAdmissionPolicy leaves contract.AdmissionPolicy off the clusters:
	// the spoke runtime then stamps every new instance itself, one write
	// more per instance. Defaults to false: the policy is bound where the
	// cluster serves MutatingAdmissionPolicy, once a probe shows that it
	// refuses no create (admission_activate.go).
	DisableAdmissionPolicy bool
	// RequestTimeout bounds each request sent to a spoke; an attempt whose
	// request runs out fails and is retried. Defaults to
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// OnStep, if set, is told how long each step of Ensure took (steps.go).
	// Defaults to nothing.
	OnStep StepFunc
	// Logger defaults to controller-runtime's log.Log named "fanout".
	Logger logr.Logger
}

func (o FanOutOptions) withDefaults() FanOutOptions {
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if o.EstablishTimeout == 0 {
		o.EstablishTimeout = DefaultEstablishTimeout
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.SharedCheckTTL == 0 {
		o.SharedCheckTTL = DefaultSharedCheckTTL
	}
	if o.AllowBreaking == nil {
		o.AllowBreaking = func(string) bool { return false }
	}
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("fanout")
	}
	return o
}

// FanOut puts a graph's generated CRD on a cluster and reports what happened
// to a Tracker. Ensure has the shape of the spoke runtime's gate: the
// runtime calls it, per graph and cluster, before it starts that graph's
// watches there, and retries it with backoff until it succeeds.
type FanOut struct {
	opts    FanOutOptions
	tracker *Tracker

	spokeSchemas spokeSchemas // spoke_schemas.go
	fence        fence        // admission_fence.go
	shared       sharedChecks // shared_ensure.go
}

// NewFanOut returns a FanOut that records into tracker.
func NewFanOut(tracker *Tracker, opts FanOutOptions) *FanOut {
	f := &FanOut{opts: opts.withDefaults(), tracker: tracker}
	f.spokeSchemas.timeout = f.opts.RequestTimeout
	return f
}

// Ensure makes g's CRD established on cl, named clusterName: it checks that
// cl serves every kind g's resources use, refuses to touch a CRD fleetgraph
// does not own or to apply a breaking schema change (unless the graph opted
// in), applies the CRD with server-side apply and, where cl serves
// MutatingAdmissionPolicy, contract.AdmissionPolicy(g) (which saves the runtime
// a write per new instance), then waits for Established. It returns nil once
// the graph can be served on cl. Safe for concurrent use.
func (f *FanOut) Ensure(ctx context.Context, c Cluster, g *graph.Graph) error {
	return f.record(ctx, c, g, func() error { return f.ensureShared(ctx, c, g) })
}

// record runs ensure and reports its outcome for g on c to the tracker,
// the metrics and the log.
func (f *FanOut) record(ctx context.Context, c Cluster, g *graph.Graph, ensure func() error) error {
	start := time.Now()
	clusterName := c.Name
	clock := newStepClock(f.opts.OnStep, g.Name, clusterName)
	err := ensure()
	state, msg := classify(err)
	if ctx.Err() != nil && err != nil {
		return err // disengaged or stopped: nothing worth recording
	}
	changed := f.tracker.Record(ctx, g.Name, clusterName, g.Generation, state, msg)
	clock.lap(StepEnsure)
	if changed && f.opts.OnTransition != nil {
		f.opts.OnTransition(g.Name, clusterName, state, msg)
	}
	fanOutDuration.WithLabelValues(clusterName, g.Name, string(state)).Observe(time.Since(start).Seconds())
	if err != nil {
		// Retried with backoff: only a change of state is news.
		f.opts.Logger.V(verbosityOf(changed)).Info("CRD not ready on cluster", "cluster", clusterName, "graph", g.Name, "state", state, "reason", msg)
	}
	return err
}

// ensure is Ensure's whole work on one cluster. It returns the version of
// the CRD it saw established, and errors that name no cluster (the caller
// names it, clusterError), since clusters of one server share them. Every
// request it sends is bounded by RequestTimeout.
func (f *FanOut) ensure(ctx context.Context, c Cluster, g *graph.Graph) (establishedCRD, error) {
	clusterName, cl := c.Name, c.Cluster
	clock := newStepClock(f.opts.OnStep, g.Name, clusterName)
	ticket := f.fence.begin() // admission_fence.go
	existed, bound, err := f.precheck(ctx, clusterName, cl, g)
	if err != nil {
		return establishedCRD{}, err
	}
	clock.lap(StepChecks)
	if !existed && bound {
		reqCtx, cancel := f.request(ctx)
		err := retractAdmission(reqCtx, cl, g)
		cancel()
		if err != nil {
			return establishedCRD{}, err
		}
	}
	clock.lap(StepRetract)
	if err := f.apply(ctx, cl, g); err != nil {
		return establishedCRD{}, err
	}
	clock.lap(StepApply)
	f.tracker.Record(ctx, g.Name, clusterName, g.Generation, CRDApplied, "")
	crd, err := f.waitEstablished(ctx, cl, g.CRD.Name)
	if err != nil {
		return establishedCRD{}, err
	}
	clock.lap(StepEstablished)
	if !f.opts.DisableAdmissionPolicy {
		// After Ensure returns, for as long as the cluster is engaged.
		lifetime := c.Engagement
		if lifetime == nil {
			lifetime = ctx
		}
		f.fence.start(lifetime, fenceKey{cluster: clusterName, graph: g.Name}, ticket, func(ctx context.Context) {
			f.activateAdmission(ctx, clusterName, cl, g) // admission_activate.go
		})
	}
	return establishedCRD{uid: crd.UID, generation: crd.Generation}, nil
}

// precheck asks cl, all at once, whether it serves every kind g's
// resources use, whether its schemas of those kinds type-check g, which
// CRD of g's name it holds and whether g's admission policy is bound. They
// are independent reads, so a new graph waits for the slowest, not for
// their sum. It returns the first refusal in that order, whether the CRD
// exists, and whether a binding may need retracting before the CRD is
// created (true when the read failed: retracting is then the safe way).
func (f *FanOut) precheck(ctx context.Context, clusterName string, cl cluster.Cluster, g *graph.Graph) (existed, bound bool, err error) {
	var kindsErr, schemasErr error
	var wg sync.WaitGroup
	if !f.opts.DisableAdmissionPolicy {
		wg.Go(func() {
			var err error
			bound, err = f.policyBound(ctx, cl, g)
			bound = bound || (err != nil && !meta.IsNoMatchError(err))
		})
	}
	wg.Go(func() {
		clock := newStepClock(f.opts.OnStep, g.Name, clusterName)
		kindsErr = f.servesKinds(ctx, cl, g)
		clock.lap(StepKinds)
	})
	wg.Go(func() {
		clock := newStepClock(f.opts.OnStep, g.Name, clusterName)
		schemasErr = f.spokeSchemaVerdict(cl, g)
		clock.lap(StepSchemas)
	})
	clock := newStepClock(f.opts.OnStep, g.Name, clusterName)
	existed, readErr := f.checkExisting(ctx, cl, g)
	clock.lap(StepRead)
	wg.Wait()
	return existed, bound, cmp.Or(kindsErr, schemasErr, readErr)
}

// checkExisting refuses a CRD we do not own and a breaking change to ours.
// It reports whether the CRD exists already.
func (f *FanOut) checkExisting(ctx context.Context, cl cluster.Cluster, g *graph.Graph) (bool, error) {
	reqCtx, cancel := f.request(ctx)
	existing, err := getCRD(reqCtx, cl.GetAPIReader(), g.CRD.Name)
	cancel()
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading CRD %s: %w", g.CRD.Name, err)
	case existing.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByFleetgraph:
		return true, fmt.Errorf("%w: %s (label %s=%q)", ErrConflict, g.CRD.Name,
			v1alpha1.LabelManagedBy, existing.Labels[v1alpha1.LabelManagedBy])
	case f.opts.AllowBreaking(g.Name):
		return true, nil
	}
	if err := graph.CheckCompatible(existing, g.CRD); err != nil {
		return true, fmt.Errorf("%w: %w (annotate the RGD %s=true or %s=true to allow)", ErrIncompatible, err,
			v1alpha1.AnnotationKroAllowBreakingChanges, v1alpha1.AnnotationAllowBreakingChanges)
	}
	return true, nil
}

// apply applies g's CRD, labelled with the revision it comes from, so that
// a hub that restarts knows which revision the cluster serves.
func (f *FanOut) apply(ctx context.Context, cl cluster.Cluster, g *graph.Graph) error {
	crd := g.CRD
	u, err := ApplyObject(crd)
	if err != nil {
		return err
	}
	if rev := revisionLabel(g); rev != "" {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[fgv1alpha1.LabelGraphRevision] = rev
		u.SetLabels(labels)
	}
	reqCtx, cancel := f.request(ctx)
	defer cancel()
	err = cl.GetClient().Apply(reqCtx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(f.opts.FieldManager), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("applying CRD %s: %w", crd.Name, err)
	}
	return nil
}

// ApplyObject renders crd as the intent to apply with server-side apply:
// type meta set, and no status or server-owned metadata.
func ApplyObject(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	crd = crd.DeepCopy()
	crd.APIVersion, crd.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	return applyIntent(crd)
}

// applyIntent renders a typed object, its type meta set, as the intent to
// apply with server-side apply: no status or server-owned metadata.
func applyIntent(obj runtime.Object) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, err)
	}
	u := &unstructured.Unstructured{Object: content}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(u.Object, "metadata", "uid")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	return u, nil
}

func (f *FanOut) waitEstablished(ctx context.Context, cl cluster.Cluster, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	return waitEstablished(ctx, cl.GetAPIReader(), name, f.opts.PollInterval, f.opts.EstablishTimeout, f.opts.RequestTimeout)
}

// WaitEstablished waits, up to DefaultEstablishTimeout, until the named CRD
// is established.
func WaitEstablished(ctx context.Context, r client.Reader, name string) error {
	_, err := waitEstablished(ctx, r, name, DefaultPollInterval, DefaultEstablishTimeout, DefaultRequestTimeout)
	return err
}

// waitEstablished returns the CRD as it was seen established. Each read is
// bounded by perRequest.
func waitEstablished(ctx context.Context, r client.Reader, name string, interval, timeout, perRequest time.Duration) (*apiextensionsv1.CustomResourceDefinition, error) {
	var last string
	var seen *apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		reqCtx, cancel := context.WithTimeout(ctx, perRequest)
		defer cancel()
		crd, err := getCRD(reqCtx, r, name)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		established, msg := establishment(crd)
		last, seen = msg, crd
		return established, nil
	})
	if err != nil {
		return nil, fmt.Errorf("CRD %s not established: %s: %w", name, last, err)
	}
	return seen, nil
}

// getCRD reads a CRD live (no informer per spoke for a one-off check) and as
// unstructured, so that the cluster's scheme need not know apiextensions.
func getCRD(ctx context.Context, r client.Reader, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := r.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("decoding CRD %s: %w", name, err)
	}
	return crd, nil
}

func establishment(crd *apiextensionsv1.CustomResourceDefinition) (bool, string) {
	msg := "no Established condition yet"
	for _, c := range crd.Status.Conditions {
		switch {
		case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
			return true, ""
		case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
			msg = "names not accepted: " + c.Message
		}
	}
	return false, msg
}

// servesKinds asks cl's discovery, live, whether it serves every kind g's
// resources use; a CRD installed a moment ago counts. ctx bounds each
// request.
func (f *FanOut) servesKinds(ctx context.Context, cl cluster.Cluster, g *graph.Graph) error {
	byGV := map[schema.GroupVersion][]string{}
	for _, n := range g.Nodes {
		byGV[n.GVK.GroupVersion()] = append(byGV[n.GVK.GroupVersion()], n.GVK.Kind)
	}
	var missing []string
	for gv, kinds := range byGV {
		reqCtx, cancel := f.request(ctx)
		served, err := servedKinds(reqCtx, cl, gv)
		cancel()
		if err != nil {
			return err
		}
		for _, k := range kinds {
			if !served[k] {
				missing = append(missing, gv.WithKind(k).String())
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%w: kinds not served: %s", ErrIncompatible, strings.Join(missing, ", "))
	}
	return nil
}

// classify maps Ensure's outcome to a state and a message for humans.
func classify(err error) (CRDState, string) {
	switch {
	case err == nil:
		return CRDEstablished, ""
	case errors.Is(err, ErrConflict):
		return CRDConflict, err.Error()
	case errors.Is(err, ErrIncompatible):
		return CRDIncompatible, err.Error()
	case errors.Is(err, errNotServedYet):
		return CRDApplied, err.Error()
	}
	return CRDError, err.Error()
}
