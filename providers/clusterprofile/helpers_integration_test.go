//go:build integration

package clusterprofile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/providers/access"
	"github.com/fleetgraph/fleetgraph/providers/clusterprofile"
	"github.com/fleetgraph/fleetgraph/providers/internal/providertest"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// onLoopback lets the provider dial the test fleet, which listens on
// 127.0.0.1 only.
var onLoopback = access.Safety{AllowLoopback: true}

const pluginName = "test-plugin"

// testPlugin is the test plugin, allowed under pluginName, writing its
// marker to a file of the test's and reading tokensFile (the fleet's
// tokens when "").
func testPlugin(t *testing.T, tokensFile string, env ...string) (clusterprofile.CredentialPlugin, string) {
	t.Helper()
	dir := t.TempDir()
	if tokensFile == "" {
		tokensFile = filepath.Join(dir, "tokens.json")
		require.NoError(t, writeTokens(tokensFile, tokens))
	}
	marker := filepath.Join(dir, "ran")
	e := map[string]string{"PLUGIN_TOKENS": tokensFile, "PLUGIN_MARKER": marker}
	for i := 0; i+1 < len(env); i += 2 {
		e[env[i]] = env[i+1]
	}
	return clusterprofile.CredentialPlugin{Name: pluginName, Command: pluginPath, Env: e}, marker
}

// runs returns the lines the test plugin wrote to marker: one per run.
func runs(t *testing.T, marker string) []string {
	t.Helper()
	data, err := os.ReadFile(marker)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// startProvider runs a hub manager with a clusterprofile provider reading
// ns until the test ends.
func startProvider(t *testing.T, ns string, opts clusterprofile.Options) (*clusterprofile.Provider, *fgtesting.Engagements) {
	t.Helper()
	opts.Namespace = ns
	p := clusterprofile.New(opts)
	return p, providertest.Start(t, fleet.Hub.Config, p)
}

func hubClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return c
}

func newNamespace(t *testing.T) string {
	t.Helper()
	return providertest.NewNamespace(t, hubClient(t), "clusterprofile-")
}

// accessTo is an access provider called name for the spoke's API server.
func accessTo(name string, spoke *fgtesting.Cluster) ciav1alpha1.AccessProvider {
	return ciav1alpha1.AccessProvider{Name: name, Cluster: clientcmdv1.Cluster{
		Server: hostOf(spoke), CertificateAuthorityData: spoke.Config.CAData,
	}}
}

// createProfile creates a ClusterProfile with labels, then writes status
// (a subresource) as a cluster manager would.
func createProfile(t *testing.T, ns, name string, labels map[string]string, status ciav1alpha1.ClusterProfileStatus) *ciav1alpha1.ClusterProfile {
	t.Helper()
	cp := &ciav1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       ciav1alpha1.ClusterProfileSpec{DisplayName: name, ClusterManager: ciav1alpha1.ClusterManager{Name: "test"}},
	}
	c := hubClient(t)
	require.NoError(t, c.Create(t.Context(), cp))
	cp.Status = status
	require.NoError(t, c.Status().Update(t.Context(), cp))
	return cp
}

// updateProfile applies edit to the profile called name and writes it back
// (status too when status), retrying on conflicts.
func updateProfile(t *testing.T, ns, name string, status bool, edit func(*ciav1alpha1.ClusterProfile)) {
	t.Helper()
	c := hubClient(t)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cp := &ciav1alpha1.ClusterProfile{}
		require.NoError(ct, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cp))
		edit(cp)
		if status {
			require.NoError(ct, c.Status().Update(t.Context(), cp))
		} else {
			require.NoError(ct, c.Update(t.Context(), cp))
		}
	}, wait, tick)
}

// createKubeconfigSecret creates the kubeconfig Secret of the profile
// called profile, for the default consumer.
func createKubeconfigSecret(t *testing.T, ns, profile string, kubeconfig []byte) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: profile + "-kubeconfig", Labels: map[string]string{
			clusterprofile.ConsumerLabel: clusterprofile.DefaultConsumerName,
			clusterprofile.ProfileLabel:  profile,
		}},
		Data: map[string][]byte{clusterprofile.DefaultSecretDataKey: kubeconfig},
	}
	require.NoError(t, hubClient(t).Create(t.Context(), s))
	return s
}

// requireEvent waits for an Event with reason on the profile called name,
// whose note contains each of notes.
func requireEvent(t *testing.T, ns, name, reason string, notes ...string) eventsv1.Event {
	t.Helper()
	return providertest.RequireEvent(t, hubClient(t), ns, ciav1alpha1.ClusterProfileKind, name, reason, notes...)
}

// listNamespaces checks that the engaged cluster's client is let in.
func listNamespaces(ctx context.Context, e *fgtesting.Engagement) error {
	return e.Cluster.GetAPIReader().List(ctx, &corev1.NamespaceList{})
}

// deleteServiceAccount deletes a ServiceAccount of adminToken's, which
// revokes its tokens.
func deleteServiceAccount(c *fgtesting.Cluster, name string) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	return cs.CoreV1().ServiceAccounts("default").Delete(context.Background(), name, metav1.DeleteOptions{})
}

// rejected reports whether c's API server refuses token as unauthorized.
func rejected(t *testing.T, c *fgtesting.Cluster, token string) bool {
	t.Helper()
	cfg := &rest.Config{Host: c.Config.Host, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData}}
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{Limit: 1})
	return apierrors.IsUnauthorized(err)
}
