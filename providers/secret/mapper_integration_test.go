//go:build integration

package secret_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/secret"
)

// SecretCluster maps a kubeconfig Secret to the cluster engaged from it
// (named by its annotation when it has one), says so no longer once the
// Secret goes, and knows nothing of a Secret it does not read: one without
// the label, one in another namespace, or one whose cluster name another
// Secret holds. A Secret whose cluster cannot be engaged is known, not
// engaged.
func TestSecretClusterMapsEngagedSecrets(t *testing.T) {
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, secret.Options{Safety: onLoopback})
	one, two := fleet.Spokes()[0], fleet.Spokes()[1]
	named := newSecret(ns, "creds", one.Kubeconfig, nil)
	named.Annotations = map[string]string{secret.ClusterNameAnnotation: "eu-1"}
	require.NoError(t, hubClient(t).Create(t.Context(), named))
	plain := createSecret(t, ns, "plain", two.Kubeconfig, nil)
	require.Eventually(t, func() bool { return rec.current("eu-1") != nil && rec.current("plain") != nil }, wait, tick)

	got := func(ns, name string) string {
		c, ok := p.SecretCluster(ns, name)
		return string(c) + "/" + map[bool]string{true: "engaged", false: "not engaged"}[ok]
	}
	assert.Equal(t, "eu-1/engaged", got(ns, "creds"), "named by its annotation")
	assert.Equal(t, "plain/engaged", got(ns, "plain"))

	// Not read by the provider: never mapped.
	unlabelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabelled"},
		Data: map[string][]byte{secret.DefaultDataKey: one.Kubeconfig}}
	require.NoError(t, hubClient(t).Create(t.Context(), unlabelled))
	other := newNamespace(t)
	createSecret(t, other, "creds", one.Kubeconfig, nil)
	dup := newSecret(ns, "dup", two.Kubeconfig, nil)
	dup.Annotations = map[string]string{secret.ClusterNameAnnotation: "eu-1"}
	require.NoError(t, hubClient(t).Create(t.Context(), dup))
	assertEvent(t, ns, "dup", secret.ReasonDuplicateName)
	assert.Equal(t, "/not engaged", got(ns, "unlabelled"))
	assert.Equal(t, "/not engaged", got(other, "creds"), "another namespace")
	assert.Equal(t, "/not engaged", got(ns, "dup"), "its cluster name is another Secret's")
	assert.Equal(t, "/not engaged", got(ns, "nothing"))

	// Known, its cluster not engaged: an address the provider refuses.
	refused := createSecret(t, ns, "refused", withServer(t, one.Kubeconfig, "https://169.254.169.254"), nil)
	assertEvent(t, ns, refused.Name, secret.ReasonUnsafeKubeconfig)
	assert.Equal(t, "refused/not engaged", got(ns, "refused"))

	// Deleted: forgotten.
	require.NoError(t, hubClient(t).Delete(t.Context(), plain))
	require.Eventually(t, func() bool { _, ok := p.SecretCluster(ns, "plain"); return !ok }, wait, tick)
	assert.Equal(t, "/not engaged", got(ns, "plain"))
	assert.Equal(t, []multicluster.ClusterName{"eu-1"}, p.ClusterNames())
}
