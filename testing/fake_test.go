package testing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

// A controller engaged through mcmanager hears every fake cluster it is
// given and stops hearing one once it is removed from the provider.
func TestFakeProviderAddAndRemoveWhileRunning(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	provider := fgtesting.NewFakeProvider()
	a, err := provider.AddCluster(ctx, "a", fgtesting.FakeClusterOptions{Objects: []client.Object{configMap("early")}})
	require.NoError(t, err)

	// No API server exists: the manager's own cluster is never contacted.
	s, done, err := startWatchManager(ctx, &rest.Config{Host: "https://127.0.0.1:1"}, provider, &corev1.ConfigMap{})
	require.NoError(t, err)

	require.Eventually(t, func() bool { return s.has("a/default/early") }, 5*time.Second, 5*time.Millisecond,
		"a cluster added before the manager started is engaged when it starts")

	b, err := provider.AddCluster(ctx, "b", fgtesting.FakeClusterOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.engagement("b") != nil }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, b.GetClient().Create(ctx, configMap("in-b")))
	require.Eventually(t, func() bool { return s.has("b/default/in-b") }, 5*time.Second, 5*time.Millisecond,
		"a cluster added while the manager runs is engaged and watched")

	provider.Remove("b")
	bCtx := s.engagement("b")
	require.Eventually(t, func() bool { return bCtx.Err() != nil }, 5*time.Second, 5*time.Millisecond,
		"removing a cluster cancels its engagement context")

	require.NoError(t, b.GetClient().Create(ctx, configMap("after-removal")))
	require.NoError(t, a.GetClient().Create(ctx, configMap("still-watched")))
	require.Eventually(t, func() bool { return s.has("a/default/still-watched") }, 5*time.Second, 5*time.Millisecond,
		"the remaining cluster is still watched")
	assert.False(t, s.has("b/default/after-removal"), "a removed cluster's events must not reach the controller")
	assert.Equal(t, []string{"a"}, names(provider.ClusterNames()))

	cancel()
	require.NoError(t, <-done)
}

// A fake cluster records who wrote an object, as an API server does: the
// field manager of an apply is in the object's managedFields, in the
// answer, in a read and in a metadata-only cache.
func TestFakeClusterRecordsTheFieldManager(t *testing.T) {
	ctx := context.Background()
	f := fgtesting.NewFakeCluster(fgtesting.FakeClusterOptions{})
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "applied"}, Data: map[string]string{"a": "b"}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
	require.NoError(t, err)
	applied := &unstructured.Unstructured{Object: u}
	require.NoError(t, f.GetClient().Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner("writer"), client.ForceOwnership))
	managers := func(entries []metav1.ManagedFieldsEntry) []string {
		var out []string
		for _, e := range entries {
			out = append(out, e.Manager)
		}
		return out
	}
	assert.Equal(t, []string{"writer"}, managers(applied.GetManagedFields()), "the answer")
	meta := &metav1.PartialObjectMetadata{TypeMeta: cm.TypeMeta}
	require.NoError(t, f.GetAPIReader().Get(ctx, client.ObjectKeyFromObject(cm), meta))
	assert.Equal(t, []string{"writer"}, managers(meta.ManagedFields), "a read")
	require.NoError(t, f.GetCache().Get(ctx, client.ObjectKeyFromObject(cm), meta))
	assert.Equal(t, []string{"writer"}, managers(meta.ManagedFields), "the metadata cache")
}
