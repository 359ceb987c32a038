package hub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/steps"
)

var (
	// ErrConflict: a CRD (or published schema) of the graph's name exists
	// and fleetgraph does not own it. It is never overwritten.
	ErrConflict = errors.New("CRD exists and is not managed by fleetgraph")
	// ErrIncompatible: the cluster cannot serve the graph (a kind it needs
	// is not served there, its Check refused it, or the new schema would
	// break the served one).
	ErrIncompatible = errors.New("cluster cannot serve the graph")
	// ErrNotServedYet: the cluster will serve the graph but does not yet
	// (a Publisher's binding not bound yet); it is reported CRDApplied.
	ErrNotServedYet = errors.New("not served yet")
)

var (
	_ multicluster.Aware = &FanOut{}
	_ manager.Runnable   = &FanOut{}
)

// FanOut puts graphs' CRDs on the clusters a multicluster-runtime manager
// engages and records, per graph and cluster, where each stands. Add it to
// the manager (it is a multicluster.Aware and a manager.Runnable) before
// anything that calls Ensure, so that it knows the clusters first. Its
// methods are safe for concurrent use.
type FanOut struct {
	opts    Options
	tracker *tracker

	clusters  engagements  // clusters.go
	shared    sharedChecks // shared_ensure.go
	admission admissions   // admission*.go
	served    servedGraphs // serve.go
	publisher publications // publish.go
	repairs   repairs      // repair*.go
	stop      context.CancelFunc
	ctx       context.Context // ends when Start returns
}

// New returns a FanOut configured by opts.
func New(opts Options) *FanOut {
	opts = opts.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	f := &FanOut{opts: opts, ctx: ctx, stop: stop}
	f.tracker = &tracker{onChange: opts.OnChange, expected: f.expected}
	if opts.Reporter != nil {
		f.tracker.failures = failuresOf(opts.Reporter)
	}
	f.admission = admissions{opts: &f.opts}
	return f
}

// Start implements manager.Runnable: while it runs, the clusters the
// Reporter could not engage are counted in the metrics. When ctx ends,
// every background publication stops, and Start returns once they have.
func (f *FanOut) Start(ctx context.Context) error {
	stop := reportEngagementFailures(f.tracker)
	defer stop()
	<-ctx.Done()
	f.stop()
	f.publisher.wait()
	return nil
}

// Ensure is one attempt to make g's CRD established on the engaged cluster
// called cluster: it checks that the cluster serves g.Kinds, that g.Check
// passes there, that any CRD of that name is ours and the change is not
// breaking (unless g.AllowBreaking), applies the CRD with server-side
// apply, waits until it is established and, where the cluster serves
// MutatingAdmissionPolicy, binds g.Admission once that is safe. With a
// Publisher it publishes g and asks whether the cluster serves it instead.
// It returns nil once the graph can be served there, and records the
// outcome in Status either way; the caller retries on error. It has the
// shape of the fleetgraph instance runtime's gate.
//
// Once it succeeded, the FanOut keeps g there (without a Publisher): it
// watches the cluster's server, and when g's CRD, admission policy or
// binding is deleted there, Status shows the CRD's loss at once and
// Ensure runs again, with backoff, until it succeeds. g is kept until a
// later version of it succeeds there, RemoveAdmission, Stop, or the
// cluster leaves.
func (f *FanOut) Ensure(ctx context.Context, cluster string, g Graph) error {
	c, ok := f.clusters.get(cluster)
	if !ok {
		return fmt.Errorf("cluster %q is not engaged", cluster)
	}
	if f.opts.Publisher != nil {
		return f.record(ctx, c, g, func() error { return f.ensurePublished(ctx, c, g) }) // publish.go
	}
	ticket := f.admission.fence.begin()
	err := f.record(ctx, c, g, func() error { return f.ensureShared(ctx, c, g) }) // shared_ensure.go
	if err == nil {
		f.keep(c, g, ticket) // repair.go
	}
	return err
}

// record runs ensure and reports its outcome for g on c to the tracker,
// the metrics and the log.
func (f *FanOut) record(ctx context.Context, c Cluster, g Graph, ensure func() error) error {
	start := time.Now()
	clock := steps.Start(ctx, g.Name, c.Name)
	err := ensure()
	state, msg := classify(err)
	if ctx.Err() != nil && err != nil {
		return err // disengaged or stopped: nothing worth recording
	}
	changed := f.tracker.recordVersion(ctx, g.Name, c.Name, g.Generation, g.Revision, state, msg)
	clock.Lap(steps.Ensure)
	if changed && f.opts.OnTransition != nil {
		f.opts.OnTransition(g.Name, c.Name, state, msg)
	}
	fanOutDuration.WithLabelValues(c.Name, g.Name, string(state)).Observe(time.Since(start).Seconds())
	if err != nil {
		// Retried with backoff: only a change of state is news.
		f.opts.Logger.V(verbosityOf(changed)).Info("CRD not ready on cluster", "cluster", c.Name, "graph", g.Name, "state", state, "reason", msg)
	}
	return err
}

// classify maps an attempt's outcome to a state and a message for humans.
func classify(err error) (CRDState, string) {
	switch {
	case err == nil:
		return CRDEstablished, ""
	case errors.Is(err, ErrConflict):
		return CRDConflict, err.Error()
	case errors.Is(err, ErrIncompatible):
		return CRDIncompatible, err.Error()
	case errors.Is(err, ErrNotServedYet):
		return CRDApplied, err.Error()
	case errors.Is(err, errBeingDeleted):
		return CRDMissing, err.Error()
	}
	return CRDError, err.Error()
}

// Status returns the named graph's state on every cluster it was tried on
// and every cluster it is expected on (see Options.Expect), plus the
// clusters the Reporter could not engage, sorted by cluster name. It is
// empty for a graph never seen. The instance fields of each
// ClusterStatus are left for an instance runtime's owner to fill.
func (f *FanOut) Status(graph string) GraphStatus {
	return f.tracker.snapshot(graph)
}

// Unreachable says why the engaged cluster of that name stopped answering
// the Prober, and false while it answers (or has no Prober). It is the
// reachability Status shows as CRDUnreachable, for a cluster written to by
// something other than the fan-out.
func (f *FanOut) Unreachable(cluster string) (string, bool) {
	return f.tracker.unreachableWhy(cluster)
}

// RemoveAdmission deletes g's admission policy and its binding from the
// engaged cluster called cluster, after stopping any binding of it still
// on its way there, so that the policy stays off until a later Ensure.
// The FanOut stops keeping g there (see Ensure) until a later Ensure.
// Absent objects, and a cluster that does not serve the API, count as
// removed.
func (f *FanOut) RemoveAdmission(ctx context.Context, cluster Cluster, g Graph) error {
	// Forgotten before the policy goes, so that its deletion is not
	// repaired; no Ensure begun before now keeps it again.
	f.admission.fence.stop(fenceKey{cluster: cluster.Name, graph: g.Name})
	f.repairs.forget(cluster.Name, g.Name)
	return f.admission.remove(ctx, cluster, g)
}

// request returns ctx bounded to one request to a cluster.
func (f *FanOut) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.opts.RequestTimeout)
}
