package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/internal/hubgraph"
	"github.com/fleetgraph/fleetgraph/internal/pull"
	"github.com/fleetgraph/fleetgraph/internal/rollout"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// PullOptions configures pull mode: clusters the hub serves without ever
// connecting to them, through an agent inside each (cmd/fleetgraph-agent)
// that holds a credential for the hub only. The platform creates a
// fleetgraph.dev PullCluster per such cluster on the hub (its labels are
// the cluster's); the hub publishes what the cluster should serve in the
// cluster's namespace there, and judges it on its agent's reports. Pull
// clusters take part in placement, rollouts, holds and ClusterValues, and
// show in FleetStatus, the RGD's status and `fleetgraph status`, like
// pushed ones; a fleet may mix both. See docs/guides/pull-mode.md.
type PullOptions struct {
	// Enable turns pull mode on: the hub installs the PullCluster,
	// GraphAssignment and GraphReport CRDs and the agents' ClusterRole
	// (fleetgraph-pull-agent) on the hub cluster, and serves every
	// PullCluster. Defaults to false: no pull cluster is served and
	// nothing is installed for them.
	Enable bool
	// HeartbeatGrace is how long an agent may go without renewing its
	// heartbeat Lease before its cluster shows Unreachable (its last
	// report kept), measured by the hub's clock from the renewal it last
	// saw, and only while the hub can read its own API server. A
	// PullCluster's spec.heartbeatGraceSeconds replaces it for that
	// cluster. Defaults to DefaultPullHeartbeatGrace.
	HeartbeatGrace time.Duration
	// Resync is how often every pull cluster's assignments are decided
	// again even when nothing said they changed. Defaults to
	// DefaultPullResync.
	Resync time.Duration
	// DepartureTimeout bounds how long the hub waits, after a PullCluster
	// is deleted, for its agent to report its instances released; then
	// the cluster's namespace goes anyway and the instances keep
	// fleetgraph's finalizer, as on a pushed cluster that leaves
	// unreachable. Defaults to DefaultPullDepartureTimeout.
	DepartureTimeout time.Duration
}

// The defaults of PullOptions' fields.
const (
	DefaultPullHeartbeatGrace   = pull.DefaultHeartbeatGrace
	DefaultPullResync           = pull.DefaultResync
	DefaultPullDepartureTimeout = pull.DefaultDepartureTimeout
)

// pullClusters connects pull mode's Source to the Hub: it decides what
// each pull cluster should serve (pull.Fleet), and gives the pull
// clusters' reports to the fleet status, the planner and the rollouts.
// src is nil when pull mode is off, and every method is then a no-op.
type pullClusters struct {
	h   *Hub
	src *pull.Source

	mu sync.Mutex
	// finished are the graphs whose removal this process finished: their
	// assignments go. Registering the graph again forgets it.
	finished map[string]bool
	// conditions is, per graph, the health condition the graph's rollout
	// last asked of a pull cluster: assignments carry it to the agents.
	conditions map[string]string
	// snapshots caches the GraphRevision snapshots assigned, which never
	// change.
	snapshots map[revisionKey]fgv1alpha1.ResourceGraphDefinitionSnapshot
}

type revisionKey struct {
	graph string
	rev   int64
}

var _ pull.Fleet = &pullClusters{}

func newPullClusters(h *Hub) *pullClusters {
	return &pullClusters{
		h: h, finished: map[string]bool{}, conditions: map[string]string{},
		snapshots: map[revisionKey]fgv1alpha1.ResourceGraphDefinitionSnapshot{},
	}
}

// setup adds the Source to the hub's manager when pull mode is on.
func (p *pullClusters) setup(local manager.Manager) error {
	o := p.h.opts.Pull
	if !o.Enable {
		return nil
	}
	if p.h.opts.Replicas.ID != "" {
		return errPullWithReplicas
	}
	src, err := pull.New(pull.Options{
		Config:           local.GetConfig(),
		Fleet:            p,
		FieldManager:     p.h.opts.Instances.FieldManager,
		HeartbeatGrace:   o.HeartbeatGrace,
		Resync:           o.Resync,
		DepartureTimeout: o.DepartureTimeout,
		Logger:           p.h.opts.Logger.WithName("pull"),
	})
	if err != nil {
		return err
	}
	p.src = src
	if err := local.Add(src); err != nil {
		return fmt.Errorf("adding the pull clusters' source: %w", err)
	}
	return nil
}

// errPullWithReplicas: pull clusters are served by one hub process.
var errPullWithReplicas = errors.New("fleetgraph: pull mode is served by one hub process; it does not run with sharded replicas (Options.Replicas.ID)")

// poke makes the pull clusters' assignments be decided again at once.
func (p *pullClusters) poke() {
	if p.src != nil {
		p.src.Poke()
	}
}

// registered forgets that the graph's removal finished: it is served
// again.
func (p *pullClusters) registered(graphName string) {
	p.mu.Lock()
	delete(p.finished, graphName)
	p.mu.Unlock()
	p.poke()
}

// removed records that the graph's removal finished, so that its
// assignments go.
func (p *pullClusters) removed(graphName string) {
	p.mu.Lock()
	p.finished[graphName] = true
	for k := range p.snapshots {
		if k.graph == graphName {
			delete(p.snapshots, k)
		}
	}
	p.mu.Unlock()
	p.poke()
}

// Changed implements pull.Fleet: the RGD's status is rewritten soon.
func (p *pullClusters) Changed(graphName string) { p.h.changed.notify(graphName) }

// is reports whether the named cluster is a pull cluster.
func (p *pullClusters) is(cluster string) bool { return p.src != nil && p.src.Is(cluster) }

// clusters are the pull clusters with their labels, for the planner.
func (p *pullClusters) clusters() []rollout.Cluster {
	if p.src == nil {
		return nil
	}
	cs := p.src.Clusters()
	out := make([]rollout.Cluster, len(cs))
	for i, c := range cs {
		out[i] = rollout.Cluster{Name: c.Name, Labels: c.Labels}
	}
	return out
}

// labels are the named pull cluster's labels; false when it is none.
func (p *pullClusters) labels(cluster string) (map[string]string, bool) {
	if p.src == nil {
		return nil, false
	}
	return p.src.Labels(cluster)
}

// addStatus appends the graph's state on the pull clusters to st: each
// cluster with an assignment or a report of it, and each placed one
// waiting for its first assignment, with why.
func (p *pullClusters) addStatus(graphName string, st *GraphStatus) {
	if p.src == nil {
		return
	}
	reg := p.h.lookup(graphName)
	if reg != nil && reg.graph.IsHubGraph() {
		return
	}
	waiting := map[string]string{}
	if reg != nil {
		rev := p.h.runtime.Latest(graphName).Revision
		if rev == 0 {
			rev = reg.revision
		}
		decided, placed := p.h.planner.DecideEngaged(graphName, rev)
		for name := range placed {
			if why := decided[name]; why != "" {
				waiting[name] = fmt.Sprintf("revision %d waits: %s", rev, why)
			} else {
				waiting[name] = ""
			}
		}
	}
	if st.Graph == "" {
		st.Graph = graphName
	}
	st.Clusters = mergeSorted(st.Clusters, p.src.Status(graphName, waiting))
}

// mergeSorted merges two lists of cluster states sorted by cluster name.
func mergeSorted(a, b []ClusterStatus) []ClusterStatus {
	if len(b) == 0 {
		return a
	}
	out := make([]ClusterStatus, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || (i < len(a) && a[i].Cluster <= b[j].Cluster) {
			out = append(out, a[i])
			i++
			continue
		}
		out = append(out, b[j])
		j++
	}
	return out
}

// observe adds the pull clusters to a rollout's observation of the
// graph, each judged on its agent's report: the revision serving it, its
// CRD state, its counts (ready as the serving revision itself confirmed).
// A cluster whose heartbeat is missed is not established.
func (p *pullClusters) observe(graphName string, out map[string]rollout.Observation) {
	if p.src == nil {
		return
	}
	for name, v := range p.src.Views(graphName) {
		if v.Assignment == nil || v.Assignment.Spec.Removal == fgv1alpha1.RemovalRelease {
			continue
		}
		o := rollout.Observation{}
		cs := pull.StatusOf(v)
		o.Established = cs.CRD == CRDEstablished
		if !o.Established {
			o.Message = fmt.Sprintf("CRD %s: %s", cs.CRD, cs.Message)
		}
		if r := v.Report; r != nil {
			if r.Served != nil {
				o.Revision = r.Served.Revision
			}
			o.Instances, o.Ready, o.Errors = int(r.Instances.Total), int(min(r.Instances.Ready, r.Instances.Confirmed)), int(r.Instances.Errors)
		}
		out[name] = o
	}
}

// errPullTarget refuses a hub graph's target that names a pull cluster:
// the hub never connects to one, so it cannot write there.
var errPullTarget = &hubgraph.UntargetableError{
	Rule: "a pull cluster, which the hub never connects to: hub graphs may target pushed clusters only",
}

// errNotReported: a pull cluster's agent has not reported what is asked.
var errNotReported = errors.New("the cluster's agent has not reported it yet")

// listInstances is a rollout's live count of a pull cluster's instances:
// the count its agent reports from its instance watch once that listed
// them, while its heartbeat is seen.
func (p *pullClusters) listInstances(graphName, cluster string) (int, bool, error) {
	v, ok := p.view(graphName, cluster)
	if !ok {
		return 0, false, nil
	}
	switch {
	case v.Availability == pull.Unavailable:
		return 0, true, fmt.Errorf("pull cluster %q: %s", cluster, pull.StatusOf(v).Message)
	case v.Report == nil || !v.Report.Instances.Counted:
		return 0, true, fmt.Errorf("pull cluster %q: instance count of graph %s: %w", cluster, graphName, errNotReported)
	}
	return int(v.Report.Instances.Total), true, nil
}

// judge is a rollout's health condition on a pull cluster: the agent asks
// it of its instances (the assignment carries it) and reports the answer.
// The first ask records the condition for the assignments, and fails
// until the agent has answered it.
func (p *pullClusters) judge(graphName, cluster, src string) (int, string, bool, error) {
	v, ok := p.view(graphName, cluster)
	if !ok {
		return 0, "", false, nil
	}
	p.mu.Lock()
	changed := p.conditions[graphName] != src
	p.conditions[graphName] = src
	p.mu.Unlock()
	if changed {
		p.poke()
	}
	h := (*fgv1alpha1.ReportedHealth)(nil)
	if v.Current() {
		h = v.Report.Health
	}
	if h == nil || h.Condition != src {
		return 0, "", true, fmt.Errorf("pull cluster %q: health condition of graph %s: %w", cluster, graphName, errNotReported)
	}
	return int(h.Passing), h.Why, true, nil
}

// view is the graph on the named pull cluster; false when it is no pull
// cluster.
func (p *pullClusters) view(graphName, cluster string) (pull.View, bool) {
	if p.src == nil {
		return pull.View{}, false
	}
	return p.src.View(graphName, cluster)
}

// removalStep is the pull clusters' part of a graph's removal step: it
// returns errHeld (wrapped) while a pull cluster has not reported the
// removal assignment done: acted on, no instance holding the finalizer,
// and the CRD gone when asked.
func (p *pullClusters) removalStep(graphName string) error {
	if p.src == nil {
		return nil
	}
	p.poke()
	var waiting []string
	for name, v := range p.src.Views(graphName) {
		if v.Assignment == nil {
			continue
		}
		r := v.Report
		switch {
		case v.Assignment.Spec.Removal == "" || !v.Current() || r.Removal == nil:
			waiting = append(waiting, fmt.Sprintf("%s (removal not acted on yet)", name))
		case !r.Removal.Done:
			waiting = append(waiting, fmt.Sprintf("%s (%d instances hold the finalizer; %s)", name, r.Removal.Held, r.Removal.Message))
		}
	}
	if len(waiting) > 0 {
		return fmt.Errorf("%w: on pull clusters %v", errHeld, waiting)
	}
	return nil
}

// Plan implements pull.Fleet.
func (p *pullClusters) Plan(ctx context.Context) pull.Plan {
	return &pullPlan{p: p, ctx: ctx, graphs: map[string]*graphPlan{}}
}

// pullPlan decides, for one pass over the pull clusters, each graph once.
type pullPlan struct {
	p   *pullClusters
	ctx context.Context

	mu     sync.Mutex
	graphs map[string]*graphPlan
}

// graphPlan is what the hub decides for one graph now: the same questions
// its spoke runtime's gate and fallback ask for a pushed cluster.
type graphPlan struct {
	p    *pullClusters
	ctx  context.Context
	name string

	reg      *registration
	removing *removal
	finished bool
	// latest is the revision the hub offers every cluster (a rollback's,
	// or the one registered last) and its graph.
	latest    int64
	latestG   *graph.Graph
	loaded    bool              // the rollouts were read
	decided   map[string]string // per cluster: "" (latest may go there) or why not
	placed    map[string]bool
	condition string
}

func (pp *pullPlan) graph(name string) *graphPlan {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if gp := pp.graphs[name]; gp != nil {
		return gp
	}
	p, h := pp.p, pp.p.h
	gp := &graphPlan{p: p, ctx: pp.ctx, name: name}
	h.mu.Lock()
	gp.reg, gp.removing = h.graphs[name], h.removals[name]
	h.mu.Unlock()
	p.mu.Lock()
	gp.finished, gp.condition = p.finished[name], p.conditions[name]
	p.mu.Unlock()
	if gp.reg != nil && !gp.reg.graph.IsHubGraph() {
		v := h.runtime.Latest(name)
		gp.latest, gp.latestG = v.Revision, v.Graph
		if v.Graph == nil || v.Removal != "" {
			gp.latest, gp.latestG = gp.reg.revision, gp.reg.graph
		}
		gp.loaded = h.planner.Loaded()
		gp.decided, gp.placed = h.planner.DecideEngaged(name, gp.latest)
	}
	pp.graphs[name] = gp
	return gp
}

// Assign implements pull.Plan.
func (pp *pullPlan) Assign(c pull.Cluster, have map[string]*fgv1alpha1.GraphAssignment, reports map[string]*fgv1alpha1.GraphReport) map[string]fgv1alpha1.GraphAssignmentSpec {
	names := map[string]bool{}
	for _, n := range pp.p.h.names() {
		names[n] = true
	}
	pp.p.h.mu.Lock()
	for n := range pp.p.h.removals {
		names[n] = true
	}
	pp.p.h.mu.Unlock()
	for n := range have {
		names[n] = true
	}
	out := map[string]fgv1alpha1.GraphAssignmentSpec{}
	for name := range names {
		var report *fgv1alpha1.GraphReportStatus
		if r := reports[name]; r != nil {
			report = &r.Status
		}
		spec, ok, err := pp.graph(name).assign(c, have[name], report)
		if err != nil {
			pp.p.h.opts.Logger.Info("pull cluster's assignment not decided; it keeps the one it has",
				"cluster", c.Name, "graph", name, "reason", err.Error())
			if cur := have[name]; cur != nil {
				out[name] = cur.Spec
			}
			continue
		}
		if ok {
			out[name] = spec
		}
	}
	return out
}

// assign decides the graph's assignment on cluster c, which has cur (nil:
// none) and reported report (nil: none); false when it should have none.
func (gp *graphPlan) assign(c pull.Cluster, cur *fgv1alpha1.GraphAssignment, report *fgv1alpha1.GraphReportStatus) (fgv1alpha1.GraphAssignmentSpec, bool, error) {
	h := gp.p.h
	switch {
	case gp.removing != nil:
		if cur == nil {
			return fgv1alpha1.GraphAssignmentSpec{}, false, nil
		}
		spec := cur.Spec
		spec.Removal = fgv1alpha1.RemovalFinalize
		if h.runtime.Latest(gp.name).Removal == spoke.RemovalRelease { // the orphan option
			spec.Removal = fgv1alpha1.RemovalRelease
		}
		spec.DeleteCRD = h.opts.CRDs.DeleteOnUnregister
		return spec, true, nil
	case gp.reg == nil && (gp.finished || cur == nil):
		return fgv1alpha1.GraphAssignmentSpec{}, false, nil
	case gp.reg == nil:
		return cur.Spec, true, nil // a graph this hub does not know (yet): kept as it is
	case gp.reg.graph.IsHubGraph():
		return fgv1alpha1.GraphAssignmentSpec{}, false, nil // served on the hub, on no spoke
	case !gp.loaded:
		if cur == nil {
			return fgv1alpha1.GraphAssignmentSpec{}, false, nil
		}
		return cur.Spec, true, nil
	case !gp.placed[c.Name]:
		return gp.unplaced(cur, report)
	}
	return gp.placedOn(c, cur, report)
}

// unplaced takes the graph off a cluster it is no longer placed on, as a
// pushed cluster: its instances are released (Release), then the
// assignment goes once the agent reports them released.
func (gp *graphPlan) unplaced(cur *fgv1alpha1.GraphAssignment, report *fgv1alpha1.GraphReportStatus) (fgv1alpha1.GraphAssignmentSpec, bool, error) {
	if cur == nil {
		return fgv1alpha1.GraphAssignmentSpec{}, false, nil
	}
	if cur.Spec.Removal == fgv1alpha1.RemovalRelease && report != nil && report.ObservedGeneration == cur.Generation &&
		report.Removal != nil && report.Removal.Done {
		return fgv1alpha1.GraphAssignmentSpec{}, false, nil
	}
	spec := cur.Spec
	spec.Removal, spec.DeleteCRD = fgv1alpha1.RemovalRelease, false
	return spec, true, nil
}

// placedOn decides for a cluster the graph is placed on: the offered
// revision when its rollout lets it go there (and the ClusterValues were
// read, for a graph that reads them); else the revision the cluster has,
// or the one its rollout sends it back to (a failed wave, a rollback, a
// hold); else, for a cluster with no assignment, the revision it served
// before, as reported, where the rollout allows it.
func (gp *graphPlan) placedOn(c pull.Cluster, cur *fgv1alpha1.GraphAssignment, report *fgv1alpha1.GraphReportStatus) (fgv1alpha1.GraphAssignmentSpec, bool, error) {
	h := gp.p.h
	if gp.allowed(c.Name, cur) && h.values.gate(spoke.Version{Graph: gp.latestG, Revision: gp.latest}) == nil {
		return gp.spec(c, gp.latest)
	}
	if cur != nil && cur.Spec.Removal == "" {
		rev := gp.fallBackFrom(c.Name, cur.Spec.Revision)
		return gp.spec(c, rev)
	}
	found := int64(0)
	switch {
	case cur != nil:
		found = cur.Spec.Revision // released, and placed again
	case report != nil && report.Served != nil:
		found = report.Served.Revision
	}
	rev := gp.fallBackFrom(c.Name, found)
	if rev == 0 || rev == gp.latest {
		return fgv1alpha1.GraphAssignmentSpec{}, false, nil
	}
	return gp.spec(c, rev)
}

// allowed reports whether the offered revision may reach the cluster now.
// An unnumbered one reaches only a cluster that has no numbered one.
func (gp *graphPlan) allowed(cluster string, cur *fgv1alpha1.GraphAssignment) bool {
	if gp.latest > 0 {
		return gp.decided[cluster] == ""
	}
	err := gp.p.h.planner.Decide(gp.name, cluster, 0)
	if errors.Is(err, rollout.ErrUnnumbered) {
		return cur == nil || cur.Spec.Revision == 0
	}
	return err == nil
}

// fallBackFrom is the planner's FallBackFrom: the revision a cluster that
// has revision found goes back to, if its rollout sends it back.
func (gp *graphPlan) fallBackFrom(cluster string, found int64) int64 {
	return gp.p.h.planner.FallBackFrom(gp.name, cluster, found)
}

// spec is the assignment of revision rev on cluster c.
func (gp *graphPlan) spec(c pull.Cluster, rev int64) (fgv1alpha1.GraphAssignmentSpec, bool, error) {
	snap, err := gp.snapshot(rev)
	if err != nil {
		return fgv1alpha1.GraphAssignmentSpec{}, false, err
	}
	spec := fgv1alpha1.GraphAssignmentSpec{
		Revision:        rev,
		Snapshot:        snap,
		Cluster:         fgv1alpha1.AssignedCluster{Name: c.Name, Labels: c.Labels},
		HealthCondition: gp.condition,
	}
	if vals := gp.p.h.values.store.Values(gp.name, c.Labels); len(vals) > 0 {
		raw, err := json.Marshal(vals)
		if err != nil {
			return fgv1alpha1.GraphAssignmentSpec{}, false, fmt.Errorf("encoding the cluster's values: %w", err)
		}
		spec.Values = &apiextensionsv1.JSON{Raw: raw}
	}
	return spec, true, nil
}

// snapshot is the RGD of revision rev: the registered spec when it is
// that revision, else the GraphRevision record (cached: records never
// change).
func (gp *graphPlan) snapshot(rev int64) (fgv1alpha1.ResourceGraphDefinitionSnapshot, error) {
	reg := gp.reg
	if rev == reg.revision {
		return fgv1alpha1.ResourceGraphDefinitionSnapshot{
			Name: gp.name, Generation: reg.graph.Generation, AllowBreakingChanges: reg.allowBreaking, Spec: *reg.spec.DeepCopy(),
		}, nil
	}
	p := gp.p
	key := revisionKey{gp.name, rev}
	p.mu.Lock()
	snap, ok := p.snapshots[key]
	p.mu.Unlock()
	if ok {
		return snap, nil
	}
	revs := p.h.revisionStore()
	if revs == nil {
		return snap, fmt.Errorf("no record of revision %d of graph %s: the hub keeps none", rev, gp.name)
	}
	rec, err := revs.Get(gp.ctx, gp.name, rev)
	if err != nil {
		return snap, err
	}
	p.mu.Lock()
	p.snapshots[key] = rec.Spec.Snapshot
	p.mu.Unlock()
	return rec.Spec.Snapshot, nil
}
