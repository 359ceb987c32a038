//go:build integration

package clusterprofile_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/access"
	"github.com/fleetgraph/fleetgraph/providers/clusterprofile"
	"github.com/fleetgraph/fleetgraph/providers/internal/providertest"
)

// One profile reaches its cluster through an allowed credential plugin,
// another through a kubeconfig Secret; both are engaged with their
// labels and valid properties, and the plugin ran once, with nothing of
// the hub's environment.
func TestProfilesEngageThroughAPluginOrASecret(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pl, marker := testPlugin(t, "")
	p, rec := startProvider(t, ns, clusterprofile.Options{CredentialPlugins: []clusterprofile.CredentialPlugin{pl}, Safety: onLoopback})
	one, two := fleet.Spokes()[0], fleet.Spokes()[1]

	createProfile(t, ns, "by-plugin", map[string]string{"tier": "prod"}, ciav1alpha1.ClusterProfileStatus{
		AccessProviders: []ciav1alpha1.AccessProvider{accessTo(pluginName, one)},
		Properties: []ciav1alpha1.Property{
			{Name: "region", Value: "eu"},
			{Name: "apiserver", Value: hostOf(one)}, // not a label value: skipped
		},
	})
	createProfile(t, ns, "by-secret", map[string]string{"tier": "dev"}, ciav1alpha1.ClusterProfileStatus{})
	createKubeconfigSecret(t, ns, "by-secret", two.Kubeconfig)

	byPlugin := providertest.RequireEngagedWith(t, rec, "by-plugin", one)
	bySecret := providertest.RequireEngagedWith(t, rec, "by-secret", two)
	require.NoError(t, listNamespaces(t.Context(), byPlugin), "the plugin's token lets the hub in")
	require.NoError(t, listNamespaces(t.Context(), bySecret))
	assert.Equal(t, map[string]string{"tier": "prod", clusterprofile.PropertyPrefix + "region": "eu"}, p.Labels("by-plugin"))
	assert.Equal(t, map[string]string{"tier": "dev"}, p.Labels("by-secret"))
	requireEvent(t, ns, "by-plugin", clusterprofile.ReasonPropertiesSkipped, `"apiserver" (its value is not a valid label value)`)
	requireEvent(t, ns, "by-plugin", access.ReasonEngaged)
	assert.Empty(t, p.EngagementFailures())
	assert.Equal(t, []multicluster.ClusterName{"by-plugin", "by-secret"}, p.ClusterNames())

	ran := runs(t, marker)
	require.Len(t, ran, 1, "the plugin ran once")
	server, env, _ := strings.Cut(ran[0], " ")
	assert.Equal(t, hostOf(one), server, "for the profile's server")
	assert.Equal(t, "KUBERNETES_EXEC_INFO,PLUGIN_MARKER,PLUGIN_TOKENS", env, "and saw its own environment only")
	assert.NotContains(t, logs.String(), tokens[hostOf(one)], "the token is never logged")
}

// A relabelled profile, or one whose properties change, changes its
// cluster's labels, and the provider says so at once.
func TestRelabelsAreToldAtOnce(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, clusterprofile.Options{Safety: onLoopback})
	spoke := fleet.Spokes()[0]
	createProfile(t, ns, "relabelled", map[string]string{"tier": "dev"}, ciav1alpha1.ClusterProfileStatus{})
	createKubeconfigSecret(t, ns, "relabelled", spoke.Kubeconfig)
	first := providertest.RequireEngagedWith(t, rec, "relabelled", spoke)
	notices := make(chan map[string]string, 10)
	p.NotifyLabelsChanged(func(name multicluster.ClusterName) { notices <- p.Labels(name) })

	start := time.Now()
	updateProfile(t, ns, "relabelled", false, func(cp *ciav1alpha1.ClusterProfile) { cp.Labels["tier"] = "prod" })
	got := <-notices
	took := time.Since(start)
	t.Logf("relabel told %v after the update was written", took)
	assert.Equal(t, "prod", got["tier"], "the notice comes once Labels gives the new labels")
	assert.Less(t, took, time.Second)

	updateProfile(t, ns, "relabelled", true, func(cp *ciav1alpha1.ClusterProfile) {
		cp.Status.Properties = []ciav1alpha1.Property{{Name: "zone", Value: "b"}}
	})
	got = <-notices
	assert.Equal(t, "b", got[clusterprofile.PropertyPrefix+"zone"])
	assert.Same(t, first, rec.Current("relabelled"), "a label change does not engage again")
}

// A profile whose Secret goes loses its cluster until the Secret is back;
// a deleted profile is disengaged and forgotten.
func TestProfilesThatLoseTheirCredentialsOrGoAreDisengaged(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, clusterprofile.Options{Safety: onLoopback})
	spoke := fleet.Spokes()[1]
	createProfile(t, ns, "leaving", nil, ciav1alpha1.ClusterProfileStatus{})
	s := createKubeconfigSecret(t, ns, "leaving", spoke.Kubeconfig)
	e := providertest.RequireEngagedWith(t, rec, "leaving", spoke)

	require.NoError(t, hubClient(t).Delete(t.Context(), s))
	require.Eventually(t, func() bool { return e.Ctx.Err() != nil }, wait, tick, "disengaged without credentials")
	assert.Contains(t, p.EngagementFailures()["leaving"], clusterprofile.ReasonNoCredentials)
	assert.True(t, p.Registered("leaving"), "still registered: its profile is there")

	createKubeconfigSecret(t, ns, "leaving", spoke.Kubeconfig)
	e = providertest.RequireEngagedWith(t, rec, "leaving", spoke)

	cp := &ciav1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leaving"}}
	require.NoError(t, hubClient(t).Delete(t.Context(), cp))
	require.Eventually(t, func() bool { return e.Ctx.Err() != nil }, wait, tick, "disengaged with its profile")
	require.Eventually(t, func() bool { return !p.Registered("leaving") }, wait, tick)
	_, err := p.Get(t.Context(), "leaving")
	assert.ErrorIs(t, err, multicluster.ErrClusterNotFound)
	assert.Empty(t, p.EngagementFailures())
}

// A control plane reported unhealthy is disengaged once the grace has
// passed, and engaged again when it recovers.
func TestAnUnhealthyControlPlaneIsDisengagedAfterTheGrace(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const grace = 2 * time.Second
	p, rec := startProvider(t, ns, clusterprofile.Options{Safety: onLoopback, UnhealthyGrace: grace})
	spoke := fleet.Spokes()[0]
	createProfile(t, ns, "flaky", nil, ciav1alpha1.ClusterProfileStatus{})
	createKubeconfigSecret(t, ns, "flaky", spoke.Kubeconfig)
	e := providertest.RequireEngagedWith(t, rec, "flaky", spoke)

	since := metav1.NewTime(time.Now().Truncate(time.Second))
	updateProfile(t, ns, "flaky", true, func(cp *ciav1alpha1.ClusterProfile) {
		cp.Status.Conditions = []metav1.Condition{{Type: ciav1alpha1.ClusterConditionControlPlaneHealthy,
			Status: metav1.ConditionFalse, Reason: "Unreachable", LastTransitionTime: since}}
	})
	require.Eventually(t, func() bool { return e.Ctx.Err() != nil }, wait, tick)
	assert.GreaterOrEqual(t, time.Since(since.Time), grace, "not before the grace")
	requireEvent(t, ns, "flaky", clusterprofile.ReasonControlPlaneUnhealthy, "ControlPlaneHealthy is False")
	assert.Contains(t, p.EngagementFailures()["flaky"], clusterprofile.ReasonControlPlaneUnhealthy)

	updateProfile(t, ns, "flaky", true, func(cp *ciav1alpha1.ClusterProfile) {
		cp.Status.Conditions[0].Status, cp.Status.Conditions[0].LastTransitionTime = metav1.ConditionTrue, metav1.Now()
	})
	providertest.RequireEngagedWith(t, rec, "flaky", spoke)
	assert.Equal(t, 2, rec.Count("flaky"))
}

// A profile names an access provider, never a program: one the platform
// allows no plugin for runs nothing, and the profile is reported as
// having no credentials, naming what it offered.
func TestPluginsThePlatformDidNotAllowNeverRun(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pl, marker := testPlugin(t, "")
	p, rec := startProvider(t, ns, clusterprofile.Options{CredentialPlugins: []clusterprofile.CredentialPlugin{pl}, Safety: onLoopback})
	spoke := fleet.Spokes()[0]
	createProfile(t, ns, "other-plugin", nil, ciav1alpha1.ClusterProfileStatus{
		AccessProviders: []ciav1alpha1.AccessProvider{accessTo("kubelogin", spoke), accessTo("../"+pluginName, spoke)},
	})
	otherNS := newNamespace(t)
	none, noneRec := startProvider(t, otherNS, clusterprofile.Options{Safety: onLoopback}) // no plugin allowed: the default
	createProfile(t, otherNS, "no-plugins", nil, ciav1alpha1.ClusterProfileStatus{
		AccessProviders: []ciav1alpha1.AccessProvider{accessTo(pluginName, spoke)},
	})

	requireEvent(t, ns, "other-plugin", clusterprofile.ReasonNoCredentials,
		`access providers "../test-plugin", "kubelogin", none of which Options.CredentialPlugins allows`)
	requireEvent(t, otherNS, "no-plugins", clusterprofile.ReasonNoCredentials,
		`"test-plugin", none of which Options.CredentialPlugins allows`)
	assert.Contains(t, p.EngagementFailures()["other-plugin"], clusterprofile.ReasonNoCredentials)
	assert.Contains(t, none.EngagementFailures()["no-plugins"], clusterprofile.ReasonNoCredentials)
	assert.Nil(t, rec.Current("other-plugin"))
	assert.Nil(t, noneRec.Current("no-plugins"))
	assert.NoFileExists(t, marker, "nothing ran")
}

// Whoever writes a ClusterProfile chooses the server the hub dials and the
// cluster a plugin is run for: the same address and TLS rules as for
// kubeconfig Secrets apply, and nothing runs or dials for a refused one.
func TestATenantsProfileCannotAimTheHubAtRefusedAddresses(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pl, marker := testPlugin(t, "")
	p, rec := startProvider(t, ns, clusterprofile.Options{CredentialPlugins: []clusterprofile.CredentialPlugin{pl}}) // default Safety
	at := func(c clientcmdv1.Cluster) ciav1alpha1.ClusterProfileStatus {
		return ciav1alpha1.ClusterProfileStatus{AccessProviders: []ciav1alpha1.AccessProvider{{Name: pluginName, Cluster: c}}}
	}
	createProfile(t, ns, "loopback", nil, at(clientcmdv1.Cluster{Server: srv.URL}))
	createProfile(t, ns, "metadata", nil, at(clientcmdv1.Cluster{Server: "https://169.254.169.254"}))
	createProfile(t, ns, "insecure", nil, at(clientcmdv1.Cluster{Server: "https://203.0.113.1", InsecureSkipTLSVerify: true}))
	createProfile(t, ns, "proxied", nil, at(clientcmdv1.Cluster{Server: "https://203.0.113.1", ProxyURL: srv.URL}))
	createProfile(t, ns, "exec-secret", nil, ciav1alpha1.ClusterProfileStatus{})
	createKubeconfigSecret(t, ns, "exec-secret", providertest.WithExec(t, fleet.Spokes()[0].Kubeconfig, "touch "+marker))

	for name, option := range map[string]string{
		"loopback": "AllowLoopback", "metadata": "AllowLinkLocal", "insecure": "AllowInsecureTLS",
		"proxied": "AllowProxyURL", "exec-secret": "AllowExec",
	} {
		ev := requireEvent(t, ns, name, access.ReasonUnsafeKubeconfig, option)
		assert.NotContains(t, ev.Note, "127.0.0.1", name)
		assert.NotContains(t, ev.Note, "169.254", name)
		assert.Nil(t, rec.Current(multicluster.ClusterName(name)), name)
		assert.Contains(t, p.EngagementFailures()[multicluster.ClusterName(name)], access.ReasonUnsafeKubeconfig, name)
	}
	assert.NoFileExists(t, marker, "no plugin ran, and no kubeconfig's exec")
	assert.Zero(t, conns.Load(), "the refused servers saw no connection")
}

// A rotated kubeconfig Secret engages the profile's cluster again in
// place; a plugin's token is renewed before it expires without engaging
// again, and the renewed token is the one used.
func TestRotationsKeepTheClusterServed(t *testing.T) {
	t.Parallel()
	one, two := fleet.Spokes()[0], fleet.Spokes()[1]

	t.Run("kubeconfig Secret", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		p, rec := startProvider(t, ns, clusterprofile.Options{Safety: onLoopback})
		createProfile(t, ns, "moving", nil, ciav1alpha1.ClusterProfileStatus{})
		s := createKubeconfigSecret(t, ns, "moving", one.Kubeconfig)
		old := providertest.RequireEngagedWith(t, rec, "moving", one)

		s.Data[clusterprofile.DefaultSecretDataKey] = two.Kubeconfig
		require.NoError(t, hubClient(t).Update(t.Context(), s))

		providertest.RequireEngagedWith(t, rec, "moving", two)
		assert.Error(t, old.Ctx.Err(), "the old engagement was cancelled")
		assert.Equal(t, 2, rec.Count("moving"))
		assert.Equal(t, []multicluster.ClusterName{"moving"}, p.ClusterNames())
	})

	t.Run("plugin token", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		first, err := adminToken(one, "renew-first")
		require.NoError(t, err)
		second, err := adminToken(one, "renew-second")
		require.NoError(t, err)
		tokensFile := filepath.Join(t.TempDir(), "tokens.json")
		require.NoError(t, writeTokens(tokensFile, map[string]string{hostOf(one): first}))
		pl, marker := testPlugin(t, tokensFile, "PLUGIN_TTL", "5s")
		_, rec := startProvider(t, ns, clusterprofile.Options{CredentialPlugins: []clusterprofile.CredentialPlugin{pl}, Safety: onLoopback})
		createProfile(t, ns, "renewing", nil, ciav1alpha1.ClusterProfileStatus{
			AccessProviders: []ciav1alpha1.AccessProvider{accessTo(pluginName, one)},
		})
		e := providertest.RequireEngagedWith(t, rec, "renewing", one)

		// The next token is another ServiceAccount's, and the first one's
		// ServiceAccount goes: only a renewed token lets the hub in.
		require.NoError(t, writeTokens(tokensFile, map[string]string{hostOf(one): second}))
		require.NoError(t, deleteServiceAccount(one, "renew-first"))
		require.Eventually(t, func() bool { return rejected(t, one, first) }, wait, tick,
			"the first token is refused (once the API server's token cache let it go)")
		n := len(runs(t, marker))
		require.Eventually(t, func() bool { return len(runs(t, marker)) > n }, wait, tick, "the plugin runs again before the token expires")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.NoError(c, listNamespaces(t.Context(), e))
		}, wait, tick, "the renewed token is used")
		assert.Same(t, e, rec.Current("renewing"), "renewing a token does not engage again")
		assert.Equal(t, 1, rec.Count("renewing"))
	})
}
