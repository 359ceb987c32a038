package agent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	kro "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// restoreRetry is how often the agent retries reading its own state while
// its cluster does not answer.
const restoreRetry = 2 * time.Second

// restore serves the assignments the agent kept, before it asks the hub
// anything: a restart while the hub is away serves what was served.
func (a *Agent) restore(ctx context.Context) error {
	for {
		recs, err := a.loadState(ctx)
		if err == nil {
			for _, rec := range recs {
				a.act(ctx, rec)
			}
			if len(recs) > 0 {
				a.opts.Logger.Info("serving the assignments kept in the cluster", "graphs", len(recs))
			}
			return nil
		}
		a.opts.Logger.Info("reading the agent's state; retrying", "reason", err.Error())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(restoreRetry):
		}
	}
}

func (a *Agent) loadState(ctx context.Context) ([]stateRecord, error) {
	if err := a.state.ensureNamespace(ctx); err != nil {
		return nil, err
	}
	return a.state.load(ctx)
}

// follow acts on the hub's assignments, read from the agent's cache of
// them, at each change and every SyncInterval, once the cache has read
// them from the hub: before that (the hub does not answer), the agent
// serves what it kept.
func (a *Agent) follow(ctx context.Context) {
	t := time.NewTicker(a.opts.SyncInterval)
	defer t.Stop()
	for {
		if a.hubCaches.Load().informer.HasSynced() {
			a.sync(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		case <-t.C:
		}
	}
}

// sync acts on every assignment the hub has for the cluster, and forgets
// the graphs it no longer has.
func (a *Agent) sync(ctx context.Context) {
	list := &fgv1alpha1.GraphAssignmentList{}
	if err := a.hubCaches.Load().List(ctx, list, client.InNamespace(a.opts.namespace())); err != nil {
		a.opts.Logger.Info("reading the assignments from the cache", "reason", err.Error())
		return
	}
	seen := map[string]bool{}
	for i := range list.Items {
		asg := &list.Items[i]
		seen[asg.Name] = true
		if err := a.accept(ctx, asg); err != nil {
			a.opts.Logger.Info("assignment not acted on; retrying", "graph", asg.Name, "reason", err.Error())
		}
	}
	for _, name := range a.graphNames() {
		if !seen[name] {
			a.forget(ctx, name)
		}
	}
}

func (a *Agent) graphNames() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.graphs))
	for name := range a.graphs {
		out = append(out, name)
	}
	return out
}

// accept keeps asg in the cluster, then acts on it, unless it is the one
// acted on already.
func (a *Agent) accept(ctx context.Context, asg *fgv1alpha1.GraphAssignment) error {
	a.mu.Lock()
	s := a.graphs[asg.Name]
	rec := stateRecord{Graph: asg.Name, Generation: asg.Generation, Assignment: asg.Spec}
	if s != nil {
		if s.generation == asg.Generation && sameSpec(s.spec, asg.Spec) {
			a.mu.Unlock()
			return nil
		}
		rec.Served = s.previous
	}
	a.mu.Unlock()
	if err := a.state.save(ctx, rec); err != nil {
		return err // not acted on before it is kept
	}
	a.opts.Logger.Info("assignment received", "graph", asg.Name, "revision", asg.Spec.Revision, "generation", asg.Generation, "removal", asg.Spec.Removal)
	a.act(ctx, rec)
	return nil
}

// act serves rec's assignment: its snapshot compiled, as its revision,
// with its removal mode. A snapshot that does not compile here leaves
// what serves the cluster serving, and is reported.
func (a *Agent) act(ctx context.Context, rec stateRecord) {
	spec := rec.Assignment
	a.mu.Lock()
	s := a.graphs[rec.Graph]
	if s == nil {
		s = &served{name: rec.Graph}
		a.graphs[rec.Graph] = s
	}
	before := s.spec
	s.generation, s.spec, s.values = rec.Generation, spec, decodeValues(spec.Values)
	if rec.Served != nil {
		s.previous = rec.Served
	}
	if spec.Removal == "" {
		s.stopped, s.crdDeleted, s.crdMessage = false, false, ""
	}
	a.mu.Unlock()
	if !equality.Semantic.DeepEqual(before.Cluster.Labels, spec.Cluster.Labels) {
		a.rt.ClusterLabelsChanged()
	}
	if !sameJSON(before.Values, spec.Values) {
		a.rt.ClusterValuesChanged()
	}
	g, err := a.compile(ctx, spec.Revision, spec.Snapshot)
	v := spoke.Version{Graph: g, Revision: spec.Revision, Removal: spoke.RemovalMode(spec.Removal)}
	a.mu.Lock()
	s.compileErr = err
	same, stopped := s.version == v, s.stopped
	if err == nil {
		s.version = v
	}
	a.mu.Unlock()
	if err != nil {
		a.opts.Logger.Info("assigned revision does not compile on this cluster; the revision serving it stays", "graph", rec.Graph, "revision", spec.Revision, "reason", err.Error())
		return
	}
	if same || stopped {
		return
	}
	if err := a.rt.Serve(v); err != nil {
		a.mu.Lock()
		s.compileErr = err
		a.mu.Unlock()
	}
}

// forget stops serving a graph the hub no longer assigns (its removal is
// done there, or its instances were released), leaves its instances as
// they are, and deletes its record. The hub deletes the report.
func (a *Agent) forget(ctx context.Context, name string) {
	a.rt.Stop(name)
	if err := a.state.delete(ctx, name); err != nil {
		a.opts.Logger.Info("forgetting a graph no longer assigned; retrying", "graph", name, "reason", err.Error())
		return
	}
	a.mu.Lock()
	delete(a.graphs, name)
	a.mu.Unlock()
	a.opts.Logger.Info("graph no longer assigned: no longer served", "graph", name)
}

// fallback is the runtime's fallback: after a restart, the revision the
// cluster served last serves it until the assigned one's gate passes.
func (a *Agent) fallback(ctx context.Context, _ multicluster.ClusterName, latest spoke.Version) (spoke.Version, error) {
	a.mu.Lock()
	s := a.graphs[latest.Graph.Name]
	var prev *servedRecord
	if s != nil {
		prev = s.previous
	}
	a.mu.Unlock()
	if prev == nil || prev.Revision == latest.Revision {
		return spoke.Version{}, nil
	}
	g, err := a.compile(ctx, prev.Revision, prev.Snapshot)
	if err != nil {
		return spoke.Version{}, err
	}
	return spoke.Version{Graph: g, Revision: prev.Revision}, nil
}

// compiled caches compiled snapshots: one per graph, revision and spec.
type compileKey struct {
	graph string
	rev   int64
	sum   [sha256.Size]byte
}

// compile compiles a snapshot against the cluster's own schemas, once.
func (a *Agent) compile(ctx context.Context, rev int64, snap fgv1alpha1.ResourceGraphDefinitionSnapshot) (*graph.Graph, error) {
	raw, err := json.Marshal(snap)
	if err != nil {
		return nil, fmt.Errorf("encoding revision %d of graph %s: %w", rev, snap.Name, err)
	}
	key := compileKey{graph: snap.Name, rev: rev, sum: sha256.Sum256(raw)}
	a.compiles.mu.Lock()
	if g, ok := a.compiles.graphs[key]; ok {
		a.compiles.mu.Unlock()
		return g, nil
	}
	a.compiles.mu.Unlock()
	rgd := &kro.ResourceGraphDefinition{Spec: *snap.Spec.DeepCopy()}
	rgd.Name, rgd.Generation = snap.Name, snap.Generation
	if snap.AllowBreakingChanges {
		rgd.Annotations = map[string]string{kro.AnnotationAllowBreakingChanges: "true"}
	}
	g, err := graph.CompileContext(ctx, rgd, graph.Options{Resolver: a.resolver, DynamicUnknownKinds: true, Limits: a.opts.Limits})
	if err != nil {
		return nil, fmt.Errorf("compiling revision %d of graph %s on the cluster: %w", rev, snap.Name, err)
	}
	a.compiles.mu.Lock()
	defer a.compiles.mu.Unlock()
	if a.compiles.graphs == nil || len(a.compiles.graphs) > maxCompiled {
		a.compiles.graphs = map[compileKey]*graph.Graph{}
	}
	a.compiles.graphs[key] = g
	return g, nil
}

// maxCompiled bounds the compiled snapshots kept.
const maxCompiled = 256

// sameSpec reports whether two assignments say the same, as JSON values.
func sameSpec(a, b fgv1alpha1.GraphAssignmentSpec) bool {
	return equality.Semantic.DeepEqual(jsonValue(a), jsonValue(b))
}

func jsonValue(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return err.Error()
	}
	return out
}

func sameJSON(a, b any) bool { return equality.Semantic.DeepEqual(jsonValue(a), jsonValue(b)) }

// decodeValues decodes assigned values; nil when there are none or they
// do not decode (the hub wrote them as a JSON object).
func decodeValues(raw *apiextensionsv1.JSON) map[string]any {
	if raw == nil || len(raw.Raw) == 0 {
		return nil
	}
	var out map[string]any
	if err := json.Unmarshal(raw.Raw, &out); err != nil || len(out) == 0 {
		return nil
	}
	return out
}
