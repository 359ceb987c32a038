package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/cleanup"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/crds"
	"github.com/fleetgraph/fleetgraph/internal/placementdecision"
	"github.com/fleetgraph/fleetgraph/internal/revisions"
	"github.com/fleetgraph/fleetgraph/internal/rollout"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// PlacementFunc reports whether the named cluster, with the labels its
// provider gives it (see ClusterLabeler), serves the named graph. It is
// called often and must be quick and safe for concurrent use.
type PlacementFunc func(graph, cluster string, labels map[string]string) bool

// ClusterLabeler is implemented by providers that label their clusters
// (placement and rollout waves select by the labels); see
// hub.ClusterLabeler, which it names for the façade's users.
type ClusterLabeler = hub.ClusterLabeler

// RolloutStatus is a graph's rollout as its GraphRollout's status shows
// it: phase, target and stable revisions, the wave in progress, every
// placed cluster and the ones holding the wave back.
type RolloutStatus = fgv1alpha1.GraphRolloutStatus

// Rollout returns the status of the named graph's GraphRollout, as of the
// hub's last look (every Options.Rollouts.Resync); false when it has none.
func (h *Hub) Rollout(graphName string) (RolloutStatus, bool) { return h.rollouts.status(graphName) }

// ErrNoRollout is returned by RollBack and ResumeRollout for a graph no
// GraphRollout names; match it with errors.Is.
var ErrNoRollout = rollout.ErrNoRollout

// RollBack sets spec.rollbackTo of the named graph's GraphRollout (and
// clears spec.rollbackStrategy): every placed cluster serves revision rev
// (a GraphRevision number) at once, and the rollout stops there. Revision
// 0 clears it: the latest revision is rolled out again from the first
// wave. It returns ErrNoRollout when no GraphRollout names the graph.
func (h *Hub) RollBack(ctx context.Context, graphName string, rev int64) error {
	return h.rollouts.rollBack(ctx, graphName, rev, "")
}

// RollBackInWaves sets spec.rollbackTo of the named graph's GraphRollout
// to rev with spec.rollbackStrategy "Waves": revision rev goes through the
// rollout's waves, first wave first, each behind its approval, its
// maxConcurrency and its health gates judged on revision rev, while the
// clusters of waves not reached keep what they serve. The rollout is
// RollingBack meanwhile (status.manualRollback says which wave) and ends
// RolledBack with reason "Manual". RollBack(ctx, graphName, 0) clears it.
// It returns ErrNoRollout when no GraphRollout names the graph.
func (h *Hub) RollBackInWaves(ctx context.Context, graphName string, rev int64) error {
	if rev <= 0 {
		return fmt.Errorf("rolling graph %s back in waves: revision %d: %w", graphName, rev, ErrInvalidRevision)
	}
	return h.rollouts.rollBack(ctx, graphName, rev, fgv1alpha1.RollbackInWaves)
}

// ErrInvalidRevision is returned by RollBackInWaves for a revision number
// below 1; match it with errors.Is.
var ErrInvalidRevision = errors.New("not a revision number")

// ResumeRollout restarts the failed wave of the named graph's rollout: its
// deadline counts from now (it sets the fleetgraph.dev/resume annotation).
// It returns ErrNoRollout when no GraphRollout names the graph.
func (h *Hub) ResumeRollout(ctx context.Context, graphName string) error {
	return h.rollouts.resume(ctx, graphName)
}

// Approve approves a wave that waits for approval (a wave with approval:
// Required) of the GraphRollout named rolloutName, or of the one that rules the
// graph so named. wave is the wave's name, for the revision being
// rolled out, or a revision number in decimal, for every wave of that
// revision. Like kubectl, it sets the fleetgraph.dev/approve annotation;
// the hub records the approval in the status within Options.Rollouts.Resync,
// with an event naming the approver (the hub's own user, as the API
// server authenticates it; see fgv1alpha1.AnnotationApprovedBy). It returns
// ErrNoRollout for an unknown rollout, ErrUnknownWave for an unknown
// wave, and ErrNoSuchRevision for a revision not published yet or one
// that can no longer be rolled out (an approval never opens a revision
// before it exists).
func (h *Hub) Approve(ctx context.Context, rolloutName, wave string) error {
	return h.rollouts.approve(ctx, rolloutName, wave)
}

// ErrUnknownWave is returned by Approve for a wave the GraphRollout does
// not have; match it with errors.Is.
var ErrUnknownWave = rollout.ErrUnknownWave

// ErrNoSuchRevision is returned by Approve for a revision that does not
// exist yet, or that can no longer be rolled out; match it with errors.Is.
var ErrNoSuchRevision = rollout.ErrNoSuchRevision

// rollouts connects the rollout package's Planner and Controller to the
// hub: the gate and the fallback ask the planner, and the controller
// observes the fleet, lists instances, reconsiders clusters and serves a
// rollback's revision through the hub. It is made with the Hub; its
// controller only by SetupWithManager (nil when rollouts are disabled).
type rollouts struct {
	h          *Hub
	planner    *rollout.Planner
	controller *rollout.Controller
}

// newRollouts makes the rollouts of h, with the planner the gate and the
// fallback consult.
func newRollouts(h *Hub) *rollouts {
	r := &rollouts{h: h}
	r.planner = rollout.NewPlanner(rollout.PlacementFunc(h.opts.Rollouts.Placement), r.labelledClusters)
	return r
}

func (r *rollouts) status(graphName string) (RolloutStatus, bool) {
	if r.controller == nil {
		return RolloutStatus{}, false
	}
	return r.controller.Status(graphName)
}

func (r *rollouts) rollBack(ctx context.Context, graphName string, rev int64, strategy string) error {
	if r.controller == nil {
		return fmt.Errorf("%w: rollouts are disabled", ErrNoRollout)
	}
	spec := map[string]any{"rollbackTo": nil, "rollbackStrategy": nil}
	if rev > 0 {
		spec["rollbackTo"] = rev
	}
	if strategy != "" {
		spec["rollbackStrategy"] = strategy
	}
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return fmt.Errorf("rolling graph %s back: %w", graphName, err)
	}
	return r.controller.Patch(ctx, graphName, patch)
}

func (r *rollouts) resume(ctx context.Context, graphName string) error {
	if r.controller == nil {
		return fmt.Errorf("%w: rollouts are disabled", ErrNoRollout)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, fgv1alpha1.AnnotationResume, time.Now().UTC().Format(time.RFC3339Nano))
	return r.controller.Patch(ctx, graphName, patch)
}

func (r *rollouts) approve(ctx context.Context, rolloutName, wave string) error {
	if r.controller == nil {
		return fmt.Errorf("%w: rollouts are disabled", ErrNoRollout)
	}
	return r.controller.Approve(ctx, rolloutName, wave)
}

// labelledClusters lists the engaged clusters with their provider labels.
func (r *rollouts) labelledClusters() []rollout.Cluster {
	labeler, _ := r.h.provider.(ClusterLabeler)
	r.h.mu.Lock()
	names := make([]string, 0, len(r.h.clusters))
	for name := range r.h.clusters {
		names = append(names, name)
	}
	r.h.mu.Unlock()
	out := make([]rollout.Cluster, len(names))
	for i, name := range names {
		out[i].Name = name
		if labeler != nil {
			out[i].Labels = labeler.Labels(multicluster.ClusterName(name))
		}
	}
	return append(out, r.h.pull.clusters()...) // pull.go
}

// gate is the gate's first question: may v's revision reach the
// cluster now?
func (r *rollouts) gate(ctx context.Context, cluster multicluster.ClusterName, v spoke.Version) error {
	if err := r.planner.Ready(ctx); err != nil {
		return err
	}
	err := r.planner.Decide(v.Graph.Name, string(cluster), v.Revision)
	if errors.Is(err, rollout.ErrUnnumbered) {
		err = r.servesNoNumbered(ctx, cluster, v.Graph)
	}
	if err != nil {
		return fmt.Errorf("graph %s revision %d on cluster %q: %w", v.Graph.Name, v.Revision, cluster, err)
	}
	return nil
}

// servesNoNumbered returns nil when the cluster serves no numbered revision
// of g: neither a version the runtime serves there nor the CRD on the
// cluster names one. Only such a cluster may take an unnumbered spec that
// a rollout governs (internal/rollout/unnumbered.go): one on a numbered
// revision keeps it.
func (r *rollouts) servesNoNumbered(ctx context.Context, cluster multicluster.ClusterName, g *graph.Graph) error {
	if v, ok := r.h.runtime.Served(g.Name)[cluster]; ok && v.Revision > 0 {
		return fmt.Errorf("%w: the cluster serves revision %d", rollout.ErrHeldBack, v.Revision)
	}
	e := r.h.cluster(string(cluster))
	if e == nil {
		return fmt.Errorf("%w: cluster %q is not engaged", rollout.ErrHeldBack, cluster)
	}
	rev, err := revisions.ServedRevision(ctx, e.cl.GetAPIReader(), g.CRD.Name)
	switch {
	case err != nil:
		return fmt.Errorf("reading the revision cluster %q serves: %w", cluster, err)
	case rev > 0:
		return fmt.Errorf("%w: the cluster's CRD %s is revision %d", rollout.ErrHeldBack, g.CRD.Name, rev)
	}
	return nil
}

// placedForFallback reports whether the fallback may serve an older
// revision of the named graph on the cluster: only where it is placed.
func (r *rollouts) placedForFallback(cluster multicluster.ClusterName, graphName string) bool {
	placed, err := r.planner.Placed(graphName, string(cluster))
	return err == nil && placed
}

// setup runs the GraphRollout controller on the hub cluster.
func (r *rollouts) setup(local manager.Manager) error {
	if r.h.opts.Rollouts.Disable {
		return nil
	}
	c, err := client.New(local.GetConfig(), client.Options{})
	if err != nil {
		return fmt.Errorf("client for the hub: %w", err)
	}
	decisions, err := client.New(local.GetConfig(), client.Options{Scheme: placementdecision.Scheme()})
	if err != nil {
		return fmt.Errorf("client for PlacementDecisions on the hub: %w", err)
	}
	followed, err := decisionCache(local)
	if err != nil {
		return err
	}
	r.planner.AwaitRollouts()
	r.controller = &rollout.Controller{
		Client:       c,
		Decisions:    followed,
		Planner:      r.planner,
		Recorder:     r.h.recorder,
		Resync:       r.h.opts.Rollouts.Resync,
		FieldManager: r.h.opts.Instances.FieldManager,
		Logger:       r.h.opts.Logger.WithName("rollout"),
		Hooks: rollout.Hooks{
			Graphs:        r.h.Graphs,
			Latest:        r.registeredRevision,
			Offered:       r.offeredRevision,
			Observe:       r.observe,
			List:          r.listInstances,
			Reconsider:    r.reconsider,
			ServeRevision: r.serveRevision,
			Others:        r.others,
			Changed:       r.h.changed.notify,
		},
	}
	if ns := r.h.opts.Rollouts.PlacementDecisions.Namespace; ns != "" {
		r.controller.Publisher = &placementdecision.Publisher{Client: decisions, Namespace: ns, FieldManager: r.h.opts.Instances.FieldManager}
	}
	if !r.h.opts.CRDs.DisableAdmissionPolicy {
		r.controller.ApproverPolicy = true
		r.controller.Installed = func(ctx context.Context) { r.bindApproverPolicy(ctx, local) }
	}
	health := &healthGates{h: r.h} // rollout_health.go
	r.controller.Hooks.CheckCondition, r.controller.Hooks.Judge = health.check, health.judge
	return local.Add(r.controller)
}

// decisionCache is the reader of the PlacementDecisions rollouts follow:
// a cache on the hub cluster, started with the manager, whose informer
// starts with the first rollout that follows a decision. Each rollout
// looks at its decision every resync; read live, that was a GET and a
// LIST per rollout per second. Published decisions are written and
// checked live (they must never overwrite one we did not write).
func decisionCache(local manager.Manager) (client.Reader, error) {
	c, err := cluster.New(local.GetConfig(), func(o *cluster.Options) {
		o.Scheme = placementdecision.Scheme()
		o.Logger = local.GetLogger()
		o.HTTPClient = local.GetHTTPClient()
		o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			return local.GetRESTMapper(), nil
		}
		o.Cache.DefaultTransform = cache.TransformStripManagedFields()
	})
	if err != nil {
		return nil, fmt.Errorf("a cache of PlacementDecisions on the hub: %w", err)
	}
	if err := local.Add(c); err != nil {
		return nil, fmt.Errorf("adding the cache of PlacementDecisions: %w", err)
	}
	return c.GetCache(), nil
}

// bindApproverPolicy binds, on the hub cluster, the admission policy that
// records who approves (rollout.ApproverPolicy), once a probe shows the
// API server can run it: the same activation as hub graphs' policies.
func (r *rollouts) bindApproverPolicy(ctx context.Context, hubCluster cluster.Cluster) {
	policy := rollout.ApproverPolicy()
	probe, object := rollout.ApproverProbe()
	admissions := hub.NewAdmissions(hub.Options{
		FieldManager: r.h.opts.Instances.FieldManager,
		Logger:       r.h.opts.Logger.WithName("rollout-approver"),
	})
	admissions.Activate(ctx, hub.Cluster{Name: "", Cluster: hubCluster}, "graphrollouts", &hub.Admission{
		Policy: policy[0], Binding: policy[1], ProbePolicy: probe[0], ProbeBinding: probe[1], ProbeObject: object,
	})
	go r.applyApproveCheck(ctx, hubCluster.GetClient())
}

// approveCheckRetry is the first wait between attempts to apply the
// approve check, doubled up to approveCheckRetryMax.
const (
	approveCheckRetry    = time.Second
	approveCheckRetryMax = 30 * time.Second
)

// applyApproveCheck applies, on the hub cluster, the admission policy that
// lets only those who may approve set the approve annotation
// (rollout.ApproveCheck), retrying until it is in place or ctx ends.
// ValidatingAdmissionPolicy is served by every Kubernetes fleetgraph
// supports; until it is in place, approvals are recorded as unverified. A
// hub whose API server does not serve it at all (a kcp workspace may not)
// is told so once, and not retried: approvals there stay unverified.
func (r *rollouts) applyApproveCheck(ctx context.Context, c client.Client) {
	log := r.h.opts.Logger.WithName("rollout-approver")
	for delay := approveCheckRetry; ; delay = min(2*delay, approveCheckRetryMax) {
		err := applyAll(ctx, c, r.h.opts.Instances.FieldManager, rollout.ApproveCheck())
		if err == nil || ctx.Err() != nil {
			return
		}
		if meta.IsNoMatchError(err) {
			log.Info("the hub's API server does not serve ValidatingAdmissionPolicy: approvals are recorded as unverified, and the approve verb is not checked", "reason", err.Error())
			return
		}
		log.Info("applying the approve admission policy; approvals are recorded as unverified meanwhile", "reason", err.Error(), "retry", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// applyAll server-side applies objs, in order, as fieldManager.
func applyAll(ctx context.Context, c client.Client, fieldManager string, objs []client.Object) error {
	for _, obj := range objs {
		u, err := crds.ApplyIntent(obj)
		if err != nil {
			return err
		}
		reqCtx, cancel := context.WithTimeout(ctx, approveCheckRetryMax)
		err = c.Apply(reqCtx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager), client.ForceOwnership)
		cancel()
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// others is, for the named graph, the clusters other hub replicas serve,
// as their status records say, and whether this Hub knows them yet
// (sharding.go).
func (r *rollouts) others(graphName string) (map[string]rollout.Foreign, bool) {
	in, known := r.h.sharding.others(graphName)
	if len(in) == 0 {
		return nil, known
	}
	out := make(map[string]rollout.Foreign, len(in))
	for name, f := range in {
		out[name] = rollout.Foreign{Replica: f.Replica, Gone: f.Gone}
	}
	return out, known
}

// registeredRevision is the revision of the graph last registered.
func (r *rollouts) registeredRevision(graphName string) int64 {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	if reg := r.h.graphs[graphName]; reg != nil {
		return reg.revision
	}
	return 0
}

// offeredRevision is the revision the runtime offers every cluster now.
func (r *rollouts) offeredRevision(graphName string) int64 {
	return r.h.runtime.Latest(graphName).Revision
}

// observe is the named graph per cluster: the revision serving it, its
// latest CRD state and instance counts. A cluster a fallback serves (after
// a restart, say) has no CRD state yet: serving counts as established.
func (r *rollouts) observe(graphName string) map[string]rollout.Observation {
	out := map[string]rollout.Observation{}
	for name, v := range r.h.runtime.Served(graphName) {
		out[string(name)] = rollout.Observation{Revision: v.Revision, Established: true, Serving: true}
	}
	for name, c := range r.h.runtime.Counts(graphName) {
		o := out[string(name)]
		// Ready as the serving revision itself reconciled it: an ACTIVE
		// an earlier revision wrote, or one the new one could not
		// overwrite, does not count toward its wave's health.
		o.Instances, o.Ready, o.Errors = c.Total, min(c.Ready, c.Confirmed), c.Errors
		o.Unreconciled = max(0, c.Total-c.Reconciled)
		out[string(name)] = o
	}
	for _, c := range r.h.observed(graphName).Clusters {
		o := out[c.Cluster]
		o.Established = c.CRD == CRDEstablished
		if !o.Established {
			o.Message = fmt.Sprintf("CRD %s: %s", c.CRD, c.Message)
		}
		out[c.Cluster] = o
	}
	r.h.pull.observe(graphName, out) // pull.go
	return out
}

// listInstances counts the named graph's instances on the cluster, live:
// health must not pass on a runtime that has not seen them all yet.
func (r *rollouts) listInstances(ctx context.Context, graphName, cluster string) (int, error) {
	if n, isPull, err := r.h.pull.listInstances(graphName, cluster); isPull { // pull.go
		return n, err
	}
	g := r.h.runtime.Latest(graphName).Graph
	r.h.mu.Lock()
	e := r.h.clusters[cluster]
	r.h.mu.Unlock()
	if g == nil || e == nil {
		return 0, fmt.Errorf("graph %s is not served on cluster %q", graphName, cluster)
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(g.Instance.GVK.GroupVersion().WithKind(g.Instance.GVK.Kind + "List"))
	if err := e.cl.GetAPIReader().List(ctx, list); err != nil {
		return 0, fmt.Errorf("listing %s on cluster %q: %w", g.Instance.GVK.Kind, cluster, err)
	}
	return len(list.Items), nil
}

// reconsider retires what serves the cluster where the decision no longer
// allows it and, on a cluster the graph left, releases the instances: no
// hub serves them there any more, so none may keep our finalizer.
func (r *rollouts) reconsider(graphName, cluster string, placed bool) {
	r.h.pull.poke() // pull.go: pull clusters are decided for again
	name := multicluster.ClusterName(cluster)
	latest := r.h.runtime.Latest(graphName)
	r.h.runtime.Reconsider(graphName, name, func(v spoke.Version) bool {
		if !placed {
			return false
		}
		if latest.Graph == nil || v != latest {
			return true
		}
		// An unnumbered latest serves a cluster only where it served no
		// numbered revision (gate): it keeps it while the plan lets a new
		// revision go there.
		err := r.planner.Decide(graphName, cluster, v.Revision)
		return err == nil || errors.Is(err, rollout.ErrUnnumbered)
	})
	if placed || latest.Graph == nil {
		return
	}
	r.h.mu.Lock()
	e := r.h.clusters[cluster]
	r.h.mu.Unlock()
	if e != nil {
		go r.releaseUnplaced(e, latest.Graph)
	}
}

// releaseUnplaced takes g's admission policy off a cluster that left the
// graph's placement and takes our finalizer off its instances; the CRD,
// the instances and their children stay.
func (r *rollouts) releaseUnplaced(e *engaged, g *graph.Graph) {
	ctx, cancel := context.WithTimeout(e.ctx, departureTimeout)
	defer cancel()
	log := r.h.opts.Logger.WithValues("cluster", e.name, "graph", g.Name)
	for delay := removalRetry; ; delay = min(2*delay, removalRetryMax) {
		if placed, _ := r.planner.Placed(g.Name, e.name); placed {
			return // placed again meanwhile
		}
		err := r.h.removeAdmission(ctx, e.hubCluster(), g)
		if err == nil {
			var n int
			n, err = cleanup.ReleaseInstances(ctx, e.cl, g, contract.Finalizer)
			if err == nil {
				log.Info("graph no longer placed on the cluster: instances released, CRD kept", "released", n)
				return
			}
		}
		select {
		case <-ctx.Done():
			log.Info("gave up releasing the instances of a graph no longer placed", "reason", err.Error())
			return
		case <-time.After(delay):
		}
	}
}

// serveRevision makes revision rev the one the runtime offers, for a
// rollback or the end of one: the registered graph when it is that
// revision, else the revision's record compiled.
func (r *rollouts) serveRevision(ctx context.Context, graphName string, rev int64) error {
	r.h.mu.Lock()
	reg, revs := r.h.graphs[graphName], r.h.revisions
	r.h.mu.Unlock()
	if reg == nil || revs == nil {
		return fmt.Errorf("graph %s is not registered", graphName)
	}
	g := reg.graph
	if reg.revision != rev {
		rec, err := revs.Get(ctx, graphName, rev)
		if err != nil {
			return err
		}
		if g, err = graph.Compile(revisions.RGD(rec), r.h.compileOptions()); err != nil {
			return fmt.Errorf("compiling revision %d of graph %s: %w", rev, graphName, err)
		}
	}
	err := r.h.runtime.Serve(spoke.Version{Graph: g, Revision: rev})
	r.h.pull.poke() // pull.go
	return err
}
