package capi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	capiv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/providers/access"
)

func TestNewFillsDocumentedDefaults(t *testing.T) {
	o := New(Options{}).opts
	assert.Equal(t, DefaultNamespace, o.Namespace)
	assert.Equal(t, labels.Everything(), o.LabelSelector)
	assert.Equal(t, float32(access.DefaultQPS), o.QPS)
	assert.Equal(t, access.DefaultBurst, o.Burst)
	assert.Equal(t, access.DefaultConnectTimeout, o.ConnectTimeout)
	assert.Equal(t, access.DefaultCacheSyncTimeout, o.CacheSyncTimeout)
	assert.Equal(t, DefaultMaxConcurrentReconciles, o.MaxConcurrentReconciles)
	assert.Equal(t, access.Safety{}, o.Safety)
	assert.Empty(t, New(Options{AllNamespaces: true}).opts.Namespace)
}

func TestTheControlPlaneIsReadyByTheFieldOrTheCondition(t *testing.T) {
	cl := &capiv1beta2.Cluster{}
	assert.False(t, controlPlaneReady(cl))
	cl.Status.Initialization.ControlPlaneInitialized = ptr.To(false)
	assert.False(t, controlPlaneReady(cl))
	cl.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	assert.True(t, controlPlaneReady(cl))

	cl = &capiv1beta2.Cluster{}
	cl.Status.Conditions = []metav1.Condition{{Type: capiv1beta2.ClusterControlPlaneInitializedCondition, Status: metav1.ConditionFalse}}
	assert.False(t, controlPlaneReady(cl))
	cl.Status.Conditions[0].Status = metav1.ConditionTrue
	assert.True(t, controlPlaneReady(cl))
}

func TestOnlyAKubeconfigSecretMapsToItsCluster(t *testing.T) {
	secret := func(name, cluster string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{ClusterNameLabel: cluster}}}
	}
	got := clusterOfSecret(t.Context(), secret("dev-kubeconfig", "dev"))
	assert.Equal(t, []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "dev"}}}, got)
	assert.Empty(t, clusterOfSecret(t.Context(), secret("dev-ca", "dev")), "Cluster API's other Secrets")
	assert.Empty(t, clusterOfSecret(t.Context(), secret("prod-kubeconfig", "dev")), "another Cluster's name")
	assert.Empty(t, clusterOfSecret(t.Context(), secret("dev-kubeconfig", "")))
}
