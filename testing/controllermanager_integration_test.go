//go:build integration && controllermanager

// These tests need kube-controller-manager in the envtest cache, which
// make test does not build: make e2e-kro builds it and runs them
// (go test -tags 'integration controllermanager' ./testing/).

package testing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func TestAFleetWithControllerManagersRunsTheDeploymentController(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 1, fgtesting.FleetOptions{Cluster: fgtesting.ClusterOptions{ControllerManager: true}})
	spoke := fleet.Spokes()[0]
	c, err := client.New(spoke.Config, client.Options{})
	require.NoError(t, err)
	ctx := context.Background()

	labels := map[string]string{"app": "kcm-check"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kcm-check"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}},
			},
		},
	}
	require.NoError(t, c.Create(ctx, d))

	// Without a controller manager nothing ever writes a Deployment's
	// status or creates its ReplicaSet and Pods.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := &appsv1.Deployment{}
		require.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(d), got))
		assert.Equal(ct, got.Generation, got.Status.ObservedGeneration)
		assert.Equal(ct, int32(2), got.Status.Replicas)
	}, 60*time.Second, 200*time.Millisecond)
}
