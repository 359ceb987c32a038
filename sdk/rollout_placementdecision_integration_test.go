//go:build integration

package sdk_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	kro "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The hub namespaces of the tests below: where a scheduler writes its
// decisions, and where the hub publishes its own.
const (
	schedulerNamespace = "scheduler"
	publishNamespace   = "placements"
)

// decisionFleet prepares a fleet's hub for PlacementDecisions: their CRD
// (from the cluster-inventory-api module) and the two namespaces.
func decisionFleet(t *testing.T, fleet *fgtesting.Fleet) client.Client {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-inventory-api").Output()
	require.NoError(t, err, "locating the cluster-inventory-api module")
	_, err = envtest.InstallCRDs(fleet.Hub.Config, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases", "multicluster.x-k8s.io_placementdecisions.yaml"),
	}, MaxTime: wait}) // envtest's 10 s for discovery is not enough on a loaded machine
	require.NoError(t, err)
	c := newClient(t, fleet.Hub.Config)
	for _, ns := range []string{schedulerNamespace, publishNamespace} {
		require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	return c
}

// scheduled is a PlacementDecision a scheduler wrote in schedulerNamespace.
func scheduled(name string, labels map[string]string, clusters ...string) *ciav1alpha1.PlacementDecision {
	d := &ciav1alpha1.PlacementDecision{
		ObjectMeta:    metav1.ObjectMeta{Namespace: schedulerNamespace, Name: name, Labels: labels},
		Decisions:     []ciav1alpha1.ClusterDecision{},
		SchedulerName: "some-scheduler",
	}
	for _, c := range clusters {
		d.Decisions = append(d.Decisions, ciav1alpha1.ClusterDecision{ClusterProfileRef: ciav1alpha1.ClusterProfileReference{Name: c}})
	}
	return d
}

// published is the clusters the hub's PlacementDecision for graphName
// lists, read as any consumer reads it: every slice of its decision key.
func published(ct require.TestingT, c client.Client, graphName string) []string {
	list := &ciav1alpha1.PlacementDecisionList{}
	require.NoError(ct, c.List(context.Background(), list, client.InNamespace(publishNamespace),
		client.MatchingLabels{ciav1alpha1.DecisionKeyLabel: graphName}))
	out := []string{}
	for _, s := range list.Items {
		assert.Equal(ct, "fleetgraph", s.SchedulerName)
		assert.Equal(ct, graphName, s.Labels[ciav1alpha1.PlacementKeyLabel])
		for _, d := range s.Decisions {
			out = append(out, d.ClusterProfileRef.Name)
		}
	}
	slices.Sort(out)
	return out
}

// placementCondition is the named condition of the graph's rollout as the
// hub last wrote it.
func placementCondition(ct require.TestingT, h *sdk.Hub, graphName, condition string) metav1.Condition {
	st, ok := h.Rollout(graphName)
	require.True(ct, ok)
	cond := meta.FindStatusCondition(st.Conditions, condition)
	require.NotNil(ct, cond, "condition %s", condition)
	return *cond
}

func statusClusters(h *sdk.Hub, graphName string) []string {
	st, _ := h.Rollout(graphName)
	out := []string{}
	for _, c := range st.Clusters {
		out = append(out, c.Name)
	}
	return out
}

// A GraphRollout that follows a PlacementDecision places its graph on the
// clusters the decision lists, follows a change of the decision (a slice
// added under its decision key, a cluster dropped) as it follows a
// relabel, rolls a new revision over them wave by wave, and keeps them
// placed when the decision disappears. The hub publishes the placement as
// a PlacementDecision of its own, which follows every change and goes with
// the graph.
func TestRolloutFollowsAPlacementDecision(t *testing.T) {
	t.Parallel()
	fleet, provider, spokes := ringFleet(t) // its own: the rollout controller reads every GraphRollout on its hub cluster
	hubClient := decisionFleet(t, fleet)
	ctx := context.Background()
	require.NoError(t, hubClient.Create(ctx, scheduled("swell-targets", nil, "spoke-1", "spoke-2")))
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{
		Resync: rolloutResync, PlacementDecisions: sdk.PlacementDecisionOptions{Namespace: publishNamespace},
	}})
	gvk := webAppGVK.GroupVersion().WithKind("Swell")
	applyRollout(t, fleet.Hub.Config, "swell", twoWaves("swell", map[string]any{
		"placementDecision": map[string]any{"namespace": schedulerNamespace, "name": "swell-targets"},
	}))
	require.NoError(t, h.RegisterGraph(ctx, tideRGD(t, "swell", "Swell", "1", "")))
	for _, name := range []string{"spoke-1", "spoke-2"} {
		createWhenServed(t, spokes[name], instance(gvk, "app", map[string]any{"color": "green"}))
		requireState(t, spokes[name], gvk, "app", "ACTIVE")
	}
	requireRollout(t, h, "swell", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 1, "spoke-2": 1})
	assert.False(t, crdExists(t, fleet.Spoke("spoke-3"), "swells.kro.run"), "the decision does not list spoke-3")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, []string{"spoke-1", "spoke-2"}, published(ct, hubClient, "swell"))
		assert.Equal(ct, metav1.ConditionTrue, placementCondition(ct, h, "swell", fgv1alpha1.ConditionPlacementPublished).Status)
	}, wait, tick)
	cond := placementCondition(t, h, "swell", fgv1alpha1.ConditionPlacementDecisionRead)
	assert.Equal(t, metav1.ConditionTrue, cond.Status, cond.Message)

	// The scheduler drops spoke-2 and adds spoke-3 in a second slice.
	named := scheduled("swell-targets", nil, "spoke-1")
	require.NoError(t, hubClient.Patch(ctx, named, client.Merge))
	require.NoError(t, hubClient.Create(ctx, scheduled("swell-targets-1",
		map[string]string{ciav1alpha1.DecisionKeyLabel: "swell-targets"}, "spoke-3")))
	createWhenServed(t, spokes["spoke-3"], instance(gvk, "app", map[string]any{"color": "green"}))
	requireState(t, spokes["spoke-3"], gvk, "app", "ACTIVE")
	requireRollout(t, h, "swell", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 1, "spoke-3": 1})
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.False(ct, served(h, "swell")["spoke-2"].Serving, "spoke-2 is served no more")
		assert.Equal(ct, []string{"spoke-1", "spoke-3"}, published(ct, hubClient, "swell"))
	}, wait, tick)
	require.Eventually(t, func() bool { return !holdsFinalizer(t, spokes["spoke-2"], gvk, "app") }, wait, tick,
		"spoke-2's instance is released, as after a relabel")

	// Revision 2 goes wave by wave over the listed clusters: the canary
	// (spoke-1) first; spoke-3 waits while the canary is not Ready.
	setColor(t, spokes["spoke-1"], gvk, "app", "red")
	require.NoError(t, h.RegisterGraph(ctx, tideRGD(t, "swell", "Swell", "2", "green")))
	requireRollout(t, h, "swell", fgv1alpha1.RolloutProgressing, map[string]int64{"spoke-1": 2, "spoke-3": 1})
	requireVersion(t, spokes["spoke-3"], "app", "1")
	setColor(t, spokes["spoke-1"], gvk, "app", "green")
	requireRollout(t, h, "swell", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 2, "spoke-3": 2})
	requireVersion(t, spokes["spoke-3"], "app", "2")

	// The decision disappears: the placement stays, and the rollout says
	// why. The status written with the condition is the placement decided
	// at that look, and the publication follows it. Two deletions are not
	// one: a look between them sees a smaller decision and follows it, as
	// it follows any slice deleted (a scheduler's garbage collection shrinks
	// a decision the same way). So the scheduler first folds the second
	// slice into the named one (the cache sees both writes in order, so no
	// look sees the slice gone without the fold), and then the decision
	// goes in one deletion.
	require.NoError(t, hubClient.Patch(ctx, scheduled("swell-targets", nil, "spoke-1", "spoke-3"), client.Merge))
	require.NoError(t, hubClient.Delete(ctx, scheduled("swell-targets-1", nil)))
	require.NoError(t, hubClient.Delete(ctx, scheduled("swell-targets", nil)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cond := placementCondition(ct, h, "swell", fgv1alpha1.ConditionPlacementDecisionRead)
		assert.Equal(ct, metav1.ConditionFalse, cond.Status)
		assert.Equal(ct, "NotFound", cond.Reason)
		assert.Contains(ct, cond.Message, "the 2 clusters placed before are kept")
	}, wait, tick)
	assert.Equal(t, []string{"spoke-1", "spoke-3"}, statusClusters(h, "swell"))
	assert.Equal(t, map[string]int64{"spoke-1": 2, "spoke-3": 2}, servedRevisions(h, "swell"))
	assert.Equal(t, []string{"spoke-1", "spoke-3"}, published(t, hubClient, "swell"))
	for _, name := range []string{"spoke-1", "spoke-3"} {
		assert.True(t, served(h, "swell")[name].Serving, "%s is still served", name)
		assert.True(t, holdsFinalizer(t, spokes[name], gvk, "app"), "%s's instance is not released", name)
	}

	// The graph goes (its GraphRollout stays): so does what the hub
	// published for it.
	require.NoError(t, h.UnregisterGraph(ctx, "swell"))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Empty(ct, published(ct, hubClient, "swell"))
	}, wait, tick)
}

// The hub never overwrites a PlacementDecision it did not write, even one
// that carries its labels: the rollout says so, and the
// publication happens once the name is free. Deleting the GraphRollout
// deletes what the hub published.
func TestPublishingNeverOverwritesAnotherPlacementDecision(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1) // its own: the rollout controller reads every GraphRollout on its hub cluster
	hubClient := decisionFleet(t, fleet)
	ctx := context.Background()
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	foreign := scheduled("drift-0", map[string]string{ // every label of ours, copied
		kro.LabelManagedBy: kro.ManagedByFleetgraph, ciav1alpha1.DecisionKeyLabel: "drift", ciav1alpha1.PlacementKeyLabel: "drift",
	}, "elsewhere")
	foreign.Namespace = publishNamespace
	require.NoError(t, hubClient.Create(ctx, foreign, client.FieldOwner("someone-else")))

	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{
		Resync: rolloutResync, PlacementDecisions: sdk.PlacementDecisionOptions{Namespace: publishNamespace},
	}})
	applyRollout(t, fleet.Hub.Config, "drift", map[string]any{"graph": "drift"})
	require.NoError(t, h.RegisterGraph(ctx, tideRGD(t, "drift", "Drift", "1", "")))
	requireRollout(t, h, "drift", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 1})
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cond := placementCondition(ct, h, "drift", fgv1alpha1.ConditionPlacementPublished)
		assert.Equal(ct, metav1.ConditionFalse, cond.Status)
		assert.Equal(ct, "NotOurs", cond.Reason)
		assert.Contains(ct, cond.Message, publishNamespace+"/drift-0")
	}, wait, tick)
	got := &ciav1alpha1.PlacementDecision{}
	require.NoError(t, hubClient.Get(ctx, client.ObjectKeyFromObject(foreign), got))
	assert.Equal(t, "some-scheduler", got.SchedulerName)
	require.Len(t, got.Decisions, 1)
	assert.Equal(t, "elsewhere", got.Decisions[0].ClusterProfileRef.Name)
	for _, m := range got.ManagedFields {
		assert.NotEqual(t, "fleetgraph", m.Manager, "the hub wrote nothing of it")
	}

	// Once the name is free, the hub publishes.
	require.NoError(t, hubClient.Delete(ctx, got))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, []string{"spoke-1"}, published(ct, hubClient, "drift"))
		assert.Equal(ct, metav1.ConditionTrue, placementCondition(ct, h, "drift", fgv1alpha1.ConditionPlacementPublished).Status)
	}, wait, tick)

	// The GraphRollout goes: so does what the hub published.
	ro := &unstructured.Unstructured{}
	ro.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	ro.SetName("drift")
	require.NoError(t, newClient(t, fleet.Hub.Config).Delete(ctx, ro))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		err := hubClient.Get(ctx, client.ObjectKey{Namespace: publishNamespace, Name: "drift-0"}, &ciav1alpha1.PlacementDecision{})
		assert.True(ct, apierrors.IsNotFound(err), "published decision deleted: %v", err)
	}, wait, tick)
}
