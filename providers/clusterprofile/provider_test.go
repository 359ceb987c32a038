package clusterprofile

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"

	"github.com/fleetgraph/fleetgraph/providers/access"
)

func TestNewFillsDocumentedDefaults(t *testing.T) {
	o := New(Options{}).opts
	assert.Equal(t, DefaultNamespace, o.Namespace)
	assert.Equal(t, labels.Everything(), o.LabelSelector)
	assert.Empty(t, o.CredentialPlugins, "no plugin is allowed by default")
	assert.Equal(t, DefaultPluginTimeout, o.PluginTimeout)
	assert.Equal(t, DefaultMaxPluginOutput, o.MaxPluginOutput)
	assert.Equal(t, DefaultConsumerName, o.ConsumerName)
	assert.Equal(t, DefaultSecretDataKey, o.SecretDataKey)
	assert.Equal(t, DefaultUnhealthyGrace, o.UnhealthyGrace)
	assert.Equal(t, float32(access.DefaultQPS), o.QPS)
	assert.Equal(t, access.DefaultBurst, o.Burst)
	assert.Equal(t, access.DefaultConnectTimeout, o.ConnectTimeout)
	assert.Equal(t, access.DefaultCacheSyncTimeout, o.CacheSyncTimeout)
	assert.Equal(t, DefaultMaxConcurrentReconciles, o.MaxConcurrentReconciles)
	assert.Equal(t, access.Safety{}, o.Safety)
	assert.Empty(t, New(Options{AllNamespaces: true}).opts.Namespace)
}

func TestLabelsAreTheProfilesLabelsAndValidProperties(t *testing.T) {
	cp := &ciav1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "prod", PropertyPrefix + "region": "from-label"}},
		Status: ciav1alpha1.ClusterProfileStatus{Properties: []ciav1alpha1.Property{
			{Name: "region", Value: "eu"},
			{Name: "clusterset.k8s.io", Value: "blue"},
			{Name: "endpoint", Value: "https://10.0.0.1:6443"},
			{Name: "has space", Value: "x"},
		}},
	}

	got, skipped := clusterLabels(cp)

	assert.Equal(t, map[string]string{
		"tier":                               "prod",
		PropertyPrefix + "region":            "eu",
		PropertyPrefix + "clusterset.k8s.io": "blue",
	}, got, "a property wins over a label of the same key")
	assert.Equal(t, []string{
		`"endpoint" (its value is not a valid label value)`,
		`"has space" (its name is not valid in a label key)`,
	}, skipped)
}

func TestAProfileIsUnhealthyOnlyAfterTheGrace(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	p := New(Options{UnhealthyGrace: time.Minute})
	p.now = func() time.Time { return now }
	withHealth := func(status metav1.ConditionStatus, since time.Duration) *ciav1alpha1.ClusterProfile {
		return &ciav1alpha1.ClusterProfile{Status: ciav1alpha1.ClusterProfileStatus{Conditions: []metav1.Condition{{
			Type: ciav1alpha1.ClusterConditionControlPlaneHealthy, Status: status, Reason: "Probe",
			LastTransitionTime: metav1.NewTime(now.Add(-since)),
		}}}}
	}

	left, err := p.health(&ciav1alpha1.ClusterProfile{})
	assert.NoError(t, err, "no condition: healthy")
	assert.Zero(t, left)
	left, err = p.health(withHealth(metav1.ConditionUnknown, time.Hour))
	assert.NoError(t, err, "Unknown: not known to be unhealthy")
	assert.Zero(t, left)
	left, err = p.health(withHealth(metav1.ConditionFalse, 20*time.Second))
	assert.NoError(t, err, "within the grace")
	assert.Equal(t, 40*time.Second, left)
	_, err = p.health(withHealth(metav1.ConditionFalse, time.Minute))
	assert.ErrorIs(t, err, ErrUnhealthy)
}

// A profile's access provider is checked like a kubeconfig Secret, and
// nothing runs for one that is refused.
func TestATenantsAccessProviderIsCheckedBeforeThePluginRuns(t *testing.T) {
	var hits int
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer srv.Close()
	marker := t.TempDir() + "/ran"
	pl := CredentialPlugin{Name: "p", Command: script(t, "touch "+marker+"\necho '"+okCredential+"'")}
	p := New(Options{CredentialPlugins: []CredentialPlugin{pl}})
	for _, tc := range []struct {
		name    string
		cluster clientcmdv1.Cluster
		option  string
	}{
		{name: "loopback", cluster: clientcmdv1.Cluster{Server: srv.URL}, option: "AllowLoopback"},
		{name: "metadata", cluster: clientcmdv1.Cluster{Server: "https://169.254.169.254"}, option: "AllowLinkLocal"},
		{name: "localhost", cluster: clientcmdv1.Cluster{Server: "https://localhost:6443"}, option: "AllowLoopback"},
		{name: "proxy", cluster: clientcmdv1.Cluster{Server: "https://203.0.113.1", ProxyURL: "http://10.0.0.1:3128"}, option: "AllowProxyURL"},
		{name: "insecure", cluster: clientcmdv1.Cluster{Server: "https://203.0.113.1", InsecureSkipTLSVerify: true}, option: "AllowInsecureTLS"},
		{name: "plain HTTP", cluster: clientcmdv1.Cluster{Server: "http://203.0.113.1"}, option: "AllowPlainHTTP"},
		{name: "CA file", cluster: clientcmdv1.Cluster{Server: "https://203.0.113.1", CertificateAuthority: "/etc/hub/ca.crt"}, option: "AllowLocalFiles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.runPlugin(context.Background(), "c", pl, ciav1alpha1.AccessProvider{Name: "p", Cluster: tc.cluster})
			require.ErrorIs(t, err, access.ErrUnsafeKubeconfig)
			assert.Contains(t, err.Error(), tc.option)
			assert.NoFileExists(t, marker, "the plugin never ran")
		})
	}
	assert.Zero(t, hits, "the refused server was never contacted")
}

func TestTheFirstAllowedPluginInTheOptionsOrderIsChosen(t *testing.T) {
	p := New(Options{CredentialPlugins: []CredentialPlugin{{Name: "first", Command: "/a"}, {Name: "second", Command: "/b"}}})
	cp := &ciav1alpha1.ClusterProfile{Status: ciav1alpha1.ClusterProfileStatus{
		AccessProviders:     []ciav1alpha1.AccessProvider{{Name: "second", Cluster: clientcmdv1.Cluster{Server: "https://new"}}, {Name: "other"}},
		CredentialProviders: []ciav1alpha1.AccessProvider{{Name: "first"}, {Name: "second", Cluster: clientcmdv1.Cluster{Server: "https://old"}}},
	}}

	pl, ap := p.pluginFor(cp)
	require.NotNil(t, pl)
	assert.Equal(t, "first", pl.Name, "the platform's order, not the profile's")

	cp.Status.CredentialProviders = cp.Status.CredentialProviders[1:]
	pl, ap = p.pluginFor(cp)
	require.NotNil(t, pl)
	assert.Equal(t, "https://new", ap.Cluster.Server, "accessProviders win over the deprecated credentialProviders")

	cp.Status.AccessProviders, cp.Status.CredentialProviders = []ciav1alpha1.AccessProvider{{Name: "evil"}}, nil
	pl, _ = p.pluginFor(cp)
	assert.Nil(t, pl)
	err := p.noCredentials(cp, 0)
	assert.True(t, errors.Is(err, ErrNoCredentials))
	assert.Contains(t, err.Error(), `access providers "evil", none of which Options.CredentialPlugins allows`)
}
