package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/crds"
	"github.com/fleetgraph/fleetgraph/internal/placementdecision"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// DefaultResync is how often the Controller looks at every rollout.
const DefaultResync = time.Second

// Observation is a graph on one cluster as the hub sees it.
type Observation struct {
	// Revision serves the cluster (0: none).
	Revision int64
	// Established reports that the latest revision's CRD is established
	// there; Message says why not.
	Established bool
	Message     string
	// Instances and Ready count the graph's instances there as the
	// runtime reconciled them.
	Instances, Ready int
	// Listed is how many instances the cluster holds, as listed live;
	// filled in for the clusters of the wave in progress only (-1 when the
	// list failed).
	Listed int

	// Health gates (health.go). Errors counts the instances the serving
	// revision itself reconciled to ERROR. Judged reports that
	// spec.health.instanceCondition was asked of the cluster's instances
	// (the wave in progress only): Passing counts those the serving
	// revision confirmed ACTIVE and for which it holds, and Why says why
	// one does not (the first).
	Errors  int
	Judged  bool
	Passing int
	Why     string
	// Unreconciled counts the instances the serving revision has not
	// reconciled yet: until it has, its Errors and Ready say nothing of
	// them (0: every one, or not known, as from a pull agent).
	Unreconciled int

	// Unengaged, when set, is when a restarted hub first looked at the
	// rollout of a cluster its stored status lists in the wave in progress
	// and that the hub has not engaged yet (restart.go): it is unhealthy.
	Unengaged time.Time

	// Serving reports that some revision serves the cluster (Revision is
	// then what serves it); before, the status keeps the revision it last
	// recorded there.
	Serving bool

	// Replica, when set, names the other hub replica that serves the
	// cluster (replicas.go): Revision is what the stored status says, and
	// Unhealthy, when set, why that replica last found it unhealthy.
	Replica   string
	Unhealthy string
}

// Hooks connect the Controller to the hub. Every one is required.
type Hooks struct {
	// Graphs lists the registered graphs.
	Graphs func() []string
	// Latest is the revision of the named graph last registered (0: not
	// registered, or unnumbered).
	Latest func(graph string) int64
	// Offered is the revision the runtime offers every cluster: Latest's,
	// or a rollback's.
	Offered func(graph string) int64
	// Observe returns the named graph's state per engaged cluster.
	Observe func(graph string) map[string]Observation
	// List counts the named graph's instances on the named cluster, live.
	List func(ctx context.Context, graph, cluster string) (int, error)
	// Reconsider asks the runtime to decide again which revision serves
	// the named cluster (placed reports whether any may).
	Reconsider func(graph, cluster string, placed bool)
	// ServeRevision makes revision rev the one the runtime offers every
	// cluster, for a rollback and after one.
	ServeRevision func(ctx context.Context, graph string, rev int64) error

	// CheckCondition type-checks a health condition against the named
	// graph's latest revision. Optional: without it a rollout with an
	// instanceCondition is refused.
	CheckCondition func(graph, condition string) error
	// Judge asks a health condition of the named graph's instances on the
	// named cluster: how many the serving revision confirmed ACTIVE pass
	// it, and why one does not. Optional, with CheckCondition.
	Judge func(ctx context.Context, graph, cluster, condition string) (passing int, why string, err error)

	// Others returns, for the named graph, the clusters other hub
	// replicas serve (replicas.go), and whether this hub knows them yet:
	// until it does, every cluster the status lists that this hub does
	// not place is kept as it is. Optional: without it, such a cluster
	// leaves the list (a lone hub).
	Others func(graph string) (map[string]Foreign, bool)
	// Changed is told the graph of a rollout whose status was written.
	// Optional.
	Changed func(graph string)
}

// Controller moves GraphRollouts forward; see the package doc.
type Controller struct {
	// Client reads and writes GraphRollouts on the hub, live.
	Client client.Client
	// Planner receives the rollouts.
	Planner *Planner
	Hooks   Hooks
	// Recorder, if set, records events on GraphRollouts.
	Recorder events.EventRecorder
	// Resync defaults to DefaultResync.
	Resync time.Duration
	// FieldManager installs the CRD (and writes published
	// PlacementDecisions).
	FieldManager string
	Logger       logr.Logger
	// Decisions reads the PlacementDecisions rollouts follow
	// (spec.placementDecision), at every look, so it should be a cache;
	// its scheme must know them. Nil: a
	// rollout that names one keeps the clusters it placed, and its
	// PlacementDecisionRead condition says the hub does not read them.
	Decisions client.Reader
	// Publisher, if set, publishes every rollout's placed clusters as its
	// graph's PlacementDecision (publish.go). Nil: nothing is published.
	Publisher *placementdecision.Publisher
	// ApproverPolicy says that Installed installs ApproverPolicy, so the
	// Controller may read the approver from AnnotationApprovedBy once a
	// dry run shows the API server running it. Defaults to false: every
	// approval is recorded as by an unverified user.
	ApproverPolicy bool
	// Installed, if set, is called once the GraphRollout CRD is installed
	// (to bind ApproverPolicy); it must return at once.
	Installed func(ctx context.Context)

	mu       sync.Mutex
	statuses map[string]fgv1alpha1.GraphRolloutStatus // by graph
	names    map[string]string                        // by graph: the GraphRollout that rules it
	// decided is, per graph and cluster, the decision last seen for the
	// latest revision ("" serves), and for the offered one when it differs,
	// to reconsider the clusters whose decision changed.
	decided map[string]map[string]string
	// rolledBack is, per graph, the revision a rollback made the runtime
	// offer, until the latest is offered again.
	rolledBack map[string]int64

	// decisions is, per GraphRollout name, the PlacementDecision it last
	// read (decision.go).
	decisions map[string]*followed

	// awaited is, per GraphRollout looked at, the clusters of its wave in
	// progress not engaged since the first look (restart.go). Its own lock.
	awaited restartMemory
}

// Status returns the status of the named graph's rollout, if it has one.
func (c *Controller) Status(graphName string) (fgv1alpha1.GraphRolloutStatus, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.statuses[graphName]
	return *st.DeepCopy(), ok
}

// ErrNoRollout: no GraphRollout names the graph (as of the last look).
var ErrNoRollout = errors.New("no GraphRollout names the graph")

// Patch merges patch (a JSON merge patch) into the GraphRollout that rules
// the named graph.
func (c *Controller) Patch(ctx context.Context, graphName string, patch []byte) error {
	c.mu.Lock()
	name := c.names[graphName]
	c.mu.Unlock()
	if name == "" {
		return fmt.Errorf("%w: %s", ErrNoRollout, graphName)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName(name)
	if err := c.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching GraphRollout %s: %w", name, err)
	}
	return nil
}

// Start installs the GraphRollout CRD and runs the loop until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	if c.Resync <= 0 {
		c.Resync = DefaultResync
	}
	for delay := c.Resync; ; delay = min(2*delay, 30*time.Second) {
		err := crds.Install(ctx, c.Client, fgv1alpha1.GraphRolloutCRD(), c.FieldManager)
		if err == nil {
			break
		}
		c.Logger.Error(err, "installing the GraphRollout CRD; retrying", "retry", delay)
		c.loadUninstalled(ctx, err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
	if c.Installed != nil {
		c.Installed(ctx)
	}
	t := time.NewTicker(c.Resync)
	defer t.Stop()
	for {
		if err := c.tick(ctx); err != nil && ctx.Err() == nil {
			c.Logger.Error(err, "rollouts")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// loadUninstalled decides what the Planner knows while the GraphRollout
// CRD cannot be installed (installErr). A CRD that an earlier run
// installed still serves the GraphRollouts, and a restarted hub must
// decide by their status from its first decision: the rollouts are read
// and stepped as usual. Only when none can exist (the kind is not served)
// or the CRD is not ours are graphs served without rollouts, rather than
// not at all. Any other failure leaves the Planner unloaded: decisions
// wait, as they do until the first look.
func (c *Controller) loadUninstalled(ctx context.Context, installErr error) {
	if errors.Is(installErr, crds.ErrNotOurs) {
		c.Planner.set(nil)
		return
	}
	err := c.tick(ctx)
	switch {
	case err == nil:
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
		// The kind is not served (a list of a resource the server does
		// not serve is answered 404): no GraphRollout can exist.
		c.Planner.set(nil)
	case ctx.Err() == nil:
		c.Logger.Info("reading GraphRollouts without their CRD installed; decisions wait", "reason", err.Error())
	}
}

func (c *Controller) tick(ctx context.Context) error {
	rollouts, err := c.rollouts(ctx)
	if err != nil {
		return err
	}
	plans := map[string]*plan{}
	statuses := map[string]fgv1alpha1.GraphRolloutStatus{}
	names := map[string]string{}
	present := map[string]bool{}
	pub := c.startPublication(ctx)
	var inWavesRollouts []*fgv1alpha1.GraphRollout
	for _, ro := range rollouts {
		if _, dup := plans[ro.Spec.Graph]; dup {
			continue // the oldest one rules
		}
		present[ro.Name] = true
		listed := c.advance(ctx, ro, pub)
		p := planOf(ro)
		p.listed = listed
		plans[ro.Spec.Graph] = p
		statuses[ro.Spec.Graph] = ro.Status
		names[ro.Spec.Graph] = ro.Name
		if inWaves(ro.Spec) {
			inWavesRollouts = append(inWavesRollouts, ro)
		}
	}
	// The statuses are in place before the Planner says it is loaded: a
	// reader woken by Ready (a restarted hub's fleet status) must find the
	// stored rollout status, not none.
	c.mu.Lock()
	c.statuses, c.names = statuses, names
	c.mu.Unlock()
	c.Planner.set(plans)
	c.forgetDecisions(present)
	c.finishPublication(ctx, pub)
	// A rollback in waves is offered only once the plan that holds its
	// revision off the waves not reached is in place: offered before, the
	// previous plan (which lets any older revision go) would let every
	// cluster take it at once.
	for _, ro := range inWavesRollouts {
		if err := c.offer(ctx, ro, c.Hooks.Latest(ro.Spec.Graph)); err != nil {
			c.Logger.Info("offering the revision rolled back to; retrying", "rollout", ro.Name, "reason", err.Error())
		}
	}
	c.reconsider()
	return nil
}

// planOf is ro as decisions need it.
func planOf(ro *fgv1alpha1.GraphRollout) *plan {
	back, backFrom := backTo(ro.Status)
	return &plan{spec: ro.Spec, target: ro.Status.TargetRevision, wave: ro.Status.Wave,
		awaiting: ro.Status.AwaitingApproval != "", failed: failedBack(ro.Status),
		started: startedClusters(ro.Spec, ro.Status), back: back, backFrom: backFrom,
		held: heldPins(ro.Status), refusedAbove: refusedAbove(ro.Status)}
}

// advance steps one rollout, serves a rollback's revision, publishes its
// placement (pub) and writes the status if it changed. It returns the
// clusters the rollout's PlacementDecision lists (nil: it follows none).
func (c *Controller) advance(ctx context.Context, ro *fgv1alpha1.GraphRollout, pub *publication) map[string]bool {
	before := ro.Status.DeepCopy()
	latest := c.Hooks.Latest(ro.Spec.Graph)
	engaged := c.Planner.clusters()
	listed := c.followDecision(ctx, ro) // decision.go
	placed, labelsOf := placedClusters(ro.Spec.Graph, ro.Spec.ClusterSelector, listed, c.Planner.hook, engaged)
	waves := assign(ro.Spec, placed, labelsOf)
	obs := c.Hooks.Observe(ro.Spec.Graph)
	// Clusters other replicas serve count as they last judged them
	// (replicas.go).
	foreign := c.foreign(ro, before, waves, obs)
	// A restarted hub counts the wave's clusters it has not engaged yet
	// as unhealthy (restart.go).
	c.awaited.awaitUnengaged(ro, engaged, waves, obs)
	// Held clusters keep their wave but the rollout moves without them
	// (hold.go).
	held := heldBy(ro.Spec, placed, labelsOf)
	pinned := pinRevisions(&ro.Status, held, obs)
	moving := withoutHeld(waves, held)
	c.list(ctx, ro, moving, obs)
	evs := c.checkHealthCondition(ro, latest)
	if ro.Annotations[fgv1alpha1.AnnotationApprove] != "" && latest > 0 && !c.approverVerified(ctx, ro) {
		delete(ro.Annotations, fgv1alpha1.AnnotationApprovedBy) // not the API server's word
	}
	if !refused(ro.Status) || ro.Status.TargetRevision == 0 { // a first look only records what serves
		c.judge(ctx, ro, moving, obs)
		evs = append(evs, step(metaNow(), ro, latest, moving, obs)...)
		c.awaited.forgetJudged(ro)
	}
	sayRefused(&ro.Status)
	evs = append(evs, checkBudgets(&ro.Status, ro.Spec, moving)...)
	evs = append(evs, holdEvents(before.Clusters, held, pinned)...)
	describeClusters(&ro.Status, ro.Spec, clusterFacts{waves: waves, obs: obs, held: held, pinned: pinned, foreign: foreign, before: before.Clusters})
	listBounded(&ro.Status)
	c.publish(ctx, ro, pub) // publish.go
	if !inWaves(ro.Spec) {  // a rollback in waves is offered after the plans are set (tick)
		if err := c.offer(ctx, ro, latest); err != nil {
			ro.Status.Message = err.Error()
		}
	}
	for _, e := range evs {
		c.event(ro, e)
	}
	if !equality.Semantic.DeepEqual(before, &ro.Status) {
		if err := c.writeStatus(ctx, ro); err != nil {
			c.Logger.Info("writing rollout status; retrying", "rollout", ro.Name, "reason", err.Error())
			return listed
		}
		if c.Hooks.Changed != nil {
			c.Hooks.Changed(ro.Spec.Graph)
		}
	}
	if latest > 0 { // else nothing was judged: the approval waits for the graph
		c.clearApproval(ctx, ro)
	}
	return listed
}

// clearApproval removes the AnnotationApprove annotation once the status
// records what it approved, or once it was ignored, so that it never
// approves a later revision.
// The patch is conditional on the object not having changed since: a
// newer approval stays for the next look.
func (c *Controller) clearApproval(ctx context.Context, ro *fgv1alpha1.GraphRollout) {
	if ro.Annotations[fgv1alpha1.AnnotationApprove] == "" {
		return
	}
	patch := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q,"annotations":{%q:null}}}`, ro.ResourceVersion, fgv1alpha1.AnnotationApprove)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName(ro.Name)
	if err := c.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(c.fieldManager())); err != nil {
		c.Logger.Info("removing the approve annotation; retrying", "rollout", ro.Name, "reason", err.Error())
	}
}

// offer makes the runtime offer a rollback's revision, and the latest
// again once the rollback is cleared.
func (c *Controller) offer(ctx context.Context, ro *fgv1alpha1.GraphRollout, latest int64) error {
	c.mu.Lock()
	if c.rolledBack == nil {
		c.rolledBack = map[string]int64{}
	}
	was := c.rolledBack[ro.Spec.Graph]
	c.mu.Unlock()
	want := ro.Spec.RollbackTo
	if want == 0 {
		if was == 0 {
			return nil
		}
		want = latest
	}
	if want == 0 || c.Hooks.Offered(ro.Spec.Graph) == want {
		c.setRolledBack(ro.Spec.Graph, ro.Spec.RollbackTo)
		return nil
	}
	if err := c.Hooks.ServeRevision(ctx, ro.Spec.Graph, want); err != nil {
		return fmt.Errorf("offering revision %d: %w", want, err)
	}
	c.setRolledBack(ro.Spec.Graph, ro.Spec.RollbackTo)
	return nil
}

func (c *Controller) setRolledBack(graphName string, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev == 0 {
		delete(c.rolledBack, graphName)
	} else {
		c.rolledBack[graphName] = rev
	}
}

// reconsider compares every graph's decision per cluster with the last one
// and asks the runtime to reconsider the clusters whose changed.
func (c *Controller) reconsider() {
	clusters := c.Planner.clusters()
	c.mu.Lock()
	if c.decided == nil {
		c.decided = map[string]map[string]string{}
	}
	type change struct {
		graph, cluster string
		placed         bool
	}
	var changes []change
	seen := map[string]map[string]string{}
	for _, g := range c.Hooks.Graphs() {
		decided, placed := c.Planner.decideAll(g, c.Hooks.Latest(g), clusters)
		if offered := c.Hooks.Offered(g); offered != c.Hooks.Latest(g) {
			// A rollback in waves opens its waves to the revision the
			// runtime offers, not to the latest.
			also, _ := c.Planner.decideAll(g, offered, clusters)
			for name, d := range also {
				decided[name] += "\x00" + d
			}
		}
		seen[g] = decided
		for _, cl := range clusters {
			prev, known := c.decided[g][cl.Name]
			if known && prev != decided[cl.Name] {
				changes = append(changes, change{g, cl.Name, placed[cl.Name]})
			}
		}
	}
	c.decided = seen
	c.mu.Unlock()
	for _, ch := range changes {
		c.Hooks.Reconsider(ch.graph, ch.cluster, ch.placed)
	}
}

// list fills in Listed for the clusters of the wave in progress (or
// going back).
func (c *Controller) list(ctx context.Context, ro *fgv1alpha1.GraphRollout, waves map[string]int32, obs map[string]Observation) {
	listing := ro.Status.Wave
	if ro.Status.RollbackWave != nil {
		listing = *ro.Status.RollbackWave
	}
	for name, w := range waves {
		if w != listing {
			continue
		}
		o := obs[name]
		if o.Replica != "" {
			continue // another replica's: it lists them
		}
		n, err := c.Hooks.List(ctx, ro.Spec.Graph, name)
		if err != nil {
			n = -1
		}
		o.Listed = n
		obs[name] = o
	}
}

func (c *Controller) rollouts(ctx context.Context) ([]*fgv1alpha1.GraphRollout, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind + "List"))
	if err := c.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing GraphRollouts: %w", err)
	}
	out := make([]*fgv1alpha1.GraphRollout, 0, len(list.Items))
	for i := range list.Items {
		ro := &fgv1alpha1.GraphRollout{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, ro); err != nil {
			c.Logger.Info("skipping a GraphRollout that does not decode", "rollout", list.Items[i].GetName(), "reason", err.Error())
			continue
		}
		out = append(out, ro)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].CreationTimestamp, out[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func (c *Controller) writeStatus(ctx context.Context, ro *fgv1alpha1.GraphRollout) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro)
	if err != nil {
		return fmt.Errorf("encoding rollout %s: %w", ro.Name, err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	if err := c.Client.Status().Update(ctx, u); err != nil {
		return err
	}
	ro.ResourceVersion = u.GetResourceVersion()
	return nil
}

func (c *Controller) event(ro *fgv1alpha1.GraphRollout, e event) {
	c.Logger.Info(e.note, "rollout", ro.Name, "graph", ro.Spec.Graph, "reason", e.reason)
	if c.Recorder == nil {
		return
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	target.SetName(ro.Name)
	target.SetUID(ro.UID)
	target.SetResourceVersion(ro.ResourceVersion)
	c.Recorder.Eventf(target, nil, e.typ, e.reason, "Rollout", "%s", e.note)
}

// sortedKeys returns m's keys sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
