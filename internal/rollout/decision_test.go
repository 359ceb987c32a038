package rollout

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fleetgraph/fleetgraph/internal/placementdecision"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

func followingRollout(status ...string) *fgv1alpha1.GraphRollout {
	ro := &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Spec: fgv1alpha1.GraphRolloutSpec{Graph: "g",
			PlacementDecision: &fgv1alpha1.PlacementDecisionRef{Namespace: "sched", Name: "g"}},
	}
	for _, name := range status {
		ro.Status.Clusters = append(ro.Status.Clusters, fgv1alpha1.RolloutCluster{Name: name})
	}
	return ro
}

func listing(clusters ...string) *ciav1alpha1.PlacementDecision {
	d := &ciav1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "sched", Name: "g"}}
	for _, c := range clusters {
		d.Decisions = append(d.Decisions, ciav1alpha1.ClusterDecision{ClusterProfileRef: ciav1alpha1.ClusterProfileReference{Name: c}})
	}
	return d
}

func TestAnUnreadableDecisionKeepsThePlacement(t *testing.T) {
	ctx := context.Background()
	cl := fake.NewClientBuilder().WithScheme(placementdecision.Scheme()).WithObjects(listing("a", "b")).Build()
	c := &Controller{Decisions: cl, Logger: logr.Discard()}

	ro := followingRollout("a", "b", "c")
	assert.Equal(t, map[string]bool{"a": true, "b": true}, c.followDecision(ctx, ro))
	cond := meta.FindStatusCondition(ro.Status.Conditions, fgv1alpha1.ConditionPlacementDecisionRead)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)

	// Gone: what it last listed stays placed, and the condition says so.
	require.NoError(t, cl.Delete(ctx, listing()))
	ro = followingRollout("a", "b")
	assert.Equal(t, map[string]bool{"a": true, "b": true}, c.followDecision(ctx, ro))
	cond = meta.FindStatusCondition(ro.Status.Conditions, fgv1alpha1.ConditionPlacementDecisionRead)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, decisionNotFound, cond.Reason)
	assert.Contains(t, cond.Message, "the 2 clusters placed before are kept")

	// A restarted hub (nothing read yet) keeps what the status lists.
	restarted := &Controller{Decisions: cl, Logger: logr.Discard()}
	assert.Equal(t, map[string]bool{"a": true, "c": true}, restarted.followDecision(ctx, followingRollout("a", "c")))

	// So does a hub that cannot read them at all.
	blind := &Controller{Logger: logr.Discard()}
	ro = followingRollout("a")
	assert.Equal(t, map[string]bool{"a": true}, blind.followDecision(ctx, ro))
	assert.Equal(t, decisionUnsupported, meta.FindStatusCondition(ro.Status.Conditions, fgv1alpha1.ConditionPlacementDecisionRead).Reason)
}

func TestADecisionNarrowsWhatTheSelectorPlaces(t *testing.T) {
	cl := fake.NewClientBuilder().WithScheme(placementdecision.Scheme()).WithObjects(listing("a", "b", "z")).Build()
	c := &Controller{Decisions: cl, Logger: logr.Discard()}
	ro := followingRollout()
	ro.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	listed := c.followDecision(context.Background(), ro)
	clusters := []Cluster{{Name: "a", Labels: map[string]string{"env": "prod"}}, {Name: "b"}, {Name: "c", Labels: map[string]string{"env": "prod"}}}
	placed, _ := placedClusters("g", ro.Spec.ClusterSelector, listed, nil, clusters)
	assert.Equal(t, []string{"a"}, placed, "listed and selected; z is not engaged")

	// A decision of none places nothing; no decision, everything selected.
	none, _ := placedClusters("g", nil, map[string]bool{}, nil, clusters)
	assert.Empty(t, none)
	all, _ := placedClusters("g", nil, nil, nil, clusters)
	assert.Equal(t, []string{"a", "b", "c"}, all)

	// Without a reference the condition goes.
	ro.Spec.PlacementDecision = nil
	assert.Nil(t, c.followDecision(context.Background(), ro))
	assert.Nil(t, meta.FindStatusCondition(ro.Status.Conditions, fgv1alpha1.ConditionPlacementDecisionRead))
}
