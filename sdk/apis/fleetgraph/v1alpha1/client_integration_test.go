//go:build integration

package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A typed controller-runtime client, with AddToScheme alone, creates,
// reads, lists and updates GraphRollouts and GraphRevisions: both are
// client.Objects with their lists.
func TestTypedClientWritesGraphRolloutsAndRevisions(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 0)
	require.NoError(t, fleet.Hub.InstallCRDs(fgv1alpha1.GraphRevisionCRD(), fgv1alpha1.GraphRolloutCRD()))
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, fgv1alpha1.AddToScheme(scheme))
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx := t.Context()

	ro := &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp"},
		Spec: fgv1alpha1.GraphRolloutSpec{
			Graph:           "webapp",
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			Waves:           []fgv1alpha1.Wave{{Name: "canary", Clusters: 1}},
		},
	}
	require.NoError(t, c.Create(ctx, ro))
	ro.Status = fgv1alpha1.GraphRolloutStatus{Phase: fgv1alpha1.RolloutProgressing, TargetRevision: 2, WaveName: "canary"}
	require.NoError(t, c.Status().Update(ctx, ro))

	rev := &fgv1alpha1.GraphRevision{
		ObjectMeta: metav1.ObjectMeta{Name: fgv1alpha1.RevisionName("webapp", 1)},
		Spec: fgv1alpha1.GraphRevisionSpec{Revision: 1, Snapshot: fgv1alpha1.ResourceGraphDefinitionSnapshot{
			Name: "webapp", Generation: 3,
			Spec: v1alpha1.ResourceGraphDefinitionSpec{Schema: v1alpha1.Schema{APIVersion: "v1alpha1", Kind: "WebApp"}},
		}},
	}
	require.NoError(t, c.Create(ctx, rev))

	var rollouts fgv1alpha1.GraphRolloutList
	require.NoError(t, c.List(ctx, &rollouts))
	require.Len(t, rollouts.Items, 1)
	got := rollouts.Items[0]
	assert.Equal(t, "webapp", got.Spec.Graph)
	assert.Equal(t, "canary", got.Spec.Waves[0].Name)
	assert.Equal(t, fgv1alpha1.RolloutProgressing, got.Status.Phase, "the status subresource was written")
	assert.EqualValues(t, 2, got.Status.TargetRevision)

	var revisions fgv1alpha1.GraphRevisionList
	require.NoError(t, c.List(ctx, &revisions))
	require.Len(t, revisions.Items, 1)
	assert.Equal(t, "WebApp", revisions.Items[0].Spec.Snapshot.Spec.Schema.Kind)
	assert.EqualValues(t, 3, revisions.Items[0].Spec.Snapshot.Generation)

	copied := got.DeepCopyObject().(*fgv1alpha1.GraphRollout)
	copied.Spec.ClusterSelector.MatchLabels["env"] = "dev"
	assert.Equal(t, "prod", got.Spec.ClusterSelector.MatchLabels["env"], "a deep copy shares nothing")
}
