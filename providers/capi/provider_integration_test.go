//go:build integration

package capi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	capiv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/access"
	"github.com/fleetgraph/fleetgraph/providers/capi"
	"github.com/fleetgraph/fleetgraph/providers/internal/providertest"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	wait = providertest.Wait
	tick = providertest.Tick
)

var (
	fleet  *fgtesting.Fleet
	scheme = newScheme()
	// onLoopback lets the provider dial the test fleet, which listens on
	// 127.0.0.1 only.
	onLoopback = access.Safety{AllowLoopback: true}
)

func TestMain(m *testing.M) {
	f, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fleet = f
	code := 1
	if _, err := envtest.InstallCRDs(f.Hub.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join("testdata", "clusters.cluster.x-k8s.io.yaml")},
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := f.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// A Cluster is engaged from its kubeconfig Secret once its control plane
// is initialized (by the status field or by the condition), with the
// Cluster's labels.
func TestClustersAreEngagedOnceTheirControlPlaneIsInitialized(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, capi.Options{Safety: onLoopback})
	one, two := fleet.Spokes()[0], fleet.Spokes()[1]
	createCluster(t, ns, "by-field", map[string]string{"env": "prod"})
	createKubeconfigSecret(t, ns, "by-field", one.Kubeconfig)
	createCluster(t, ns, "by-condition", map[string]string{"env": "dev"})
	createKubeconfigSecret(t, ns, "by-condition", two.Kubeconfig)

	requireEvent(t, ns, "by-field", capi.ReasonControlPlaneNotReady)
	assert.Contains(t, p.EngagementFailures()["by-field"], capi.ReasonControlPlaneNotReady)
	assert.Nil(t, rec.Current("by-field"), "not before the control plane is initialized")
	assert.True(t, p.Registered("by-field"))

	updateStatus(t, ns, "by-field", func(cl *capiv1beta2.Cluster) {
		cl.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	})
	updateStatus(t, ns, "by-condition", func(cl *capiv1beta2.Cluster) {
		cl.Status.Conditions = []metav1.Condition{{Type: capiv1beta2.ClusterControlPlaneInitializedCondition,
			Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.Now()}}
	})

	e := providertest.RequireEngagedWith(t, rec, "by-field", one)
	providertest.RequireEngagedWith(t, rec, "by-condition", two)
	require.NoError(t, e.Cluster.GetAPIReader().List(t.Context(), &corev1.NamespaceList{}))
	assert.Equal(t, map[string]string{"env": "prod"}, p.Labels("by-field"))
	assert.Equal(t, map[string]string{"env": "dev"}, p.Labels("by-condition"))
	assert.Empty(t, p.EngagementFailures())
	requireEvent(t, ns, "by-field", access.ReasonEngaged)
}

// A rotated kubeconfig (new client credentials for the same server, as
// Cluster API's control planes rotate them) engages the cluster again in
// place; the old engagement ends.
func TestARotatedKubeconfigIsFollowed(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, capi.Options{Safety: onLoopback})
	spoke := fleet.Spokes()[0]
	createCluster(t, ns, "rotating", nil, initialized)
	s := createKubeconfigSecret(t, ns, "rotating", spoke.Kubeconfig)
	old := providertest.RequireEngagedWith(t, rec, "rotating", spoke)
	user := fmt.Sprintf("rotated-%d", time.Now().UnixNano())
	_, rotated, err := spoke.AddUser(user, "system:masters")
	require.NoError(t, err)

	s.Data[capi.KubeconfigDataKey] = rotated
	require.NoError(t, hubClient(t).Update(t.Context(), s))

	require.Eventually(t, func() bool { return old.Ctx.Err() != nil }, wait, tick, "the old engagement ends")
	e := providertest.RequireEngagedWith(t, rec, "rotating", spoke)
	assert.Equal(t, 2, rec.Count("rotating"))
	assert.Equal(t, clientCert(t, rotated), e.Cluster.GetConfig().CertData, "the new engagement uses the rotated credentials")
	require.NoError(t, e.Cluster.GetAPIReader().List(t.Context(), &corev1.NamespaceList{}))
	assert.Equal(t, []multicluster.ClusterName{"rotating"}, p.ClusterNames())
}

// A relabelled Cluster relabels its cluster at once, without engaging it
// again.
func TestARelabelledClusterIsToldAtOnce(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, capi.Options{Safety: onLoopback})
	spoke := fleet.Spokes()[1]
	createCluster(t, ns, "relabelled", map[string]string{"env": "dev"}, initialized)
	createKubeconfigSecret(t, ns, "relabelled", spoke.Kubeconfig)
	e := providertest.RequireEngagedWith(t, rec, "relabelled", spoke)
	notices := make(chan map[string]string, 10)
	p.NotifyLabelsChanged(func(name multicluster.ClusterName) { notices <- p.Labels(name) })

	start := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cl := &capiv1beta2.Cluster{}
		require.NoError(c, hubClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "relabelled"}, cl))
		cl.Labels["env"] = "prod"
		require.NoError(c, hubClient(t).Update(t.Context(), cl))
	}, wait, tick)
	got := <-notices
	took := time.Since(start)
	t.Logf("relabel told %v after the update was written", took)
	assert.Equal(t, "prod", got["env"])
	assert.Less(t, took, time.Second)
	assert.Same(t, e, rec.Current("relabelled"))
}

// A Cluster whose kubeconfig Secret goes is disengaged until it is back;
// a deleted Cluster is disengaged and forgotten.
func TestDeletedClustersAndSecretsDisengage(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, capi.Options{Safety: onLoopback})
	spoke := fleet.Spokes()[1]
	cl := createCluster(t, ns, "leaving", nil, initialized)
	s := createKubeconfigSecret(t, ns, "leaving", spoke.Kubeconfig)
	e := providertest.RequireEngagedWith(t, rec, "leaving", spoke)

	require.NoError(t, hubClient(t).Delete(t.Context(), s))
	require.Eventually(t, func() bool { return e.Ctx.Err() != nil }, wait, tick)
	requireEvent(t, ns, "leaving", access.ReasonMissingKubeconfig)
	assert.True(t, p.Registered("leaving"))

	createKubeconfigSecret(t, ns, "leaving", spoke.Kubeconfig)
	e = providertest.RequireEngagedWith(t, rec, "leaving", spoke)

	require.NoError(t, hubClient(t).Delete(t.Context(), cl))
	require.Eventually(t, func() bool { return e.Ctx.Err() != nil }, wait, tick)
	require.Eventually(t, func() bool { return !p.Registered("leaving") }, wait, tick)
	_, err := p.Get(t.Context(), "leaving")
	assert.ErrorIs(t, err, multicluster.ErrClusterNotFound)
	assert.Empty(t, p.EngagementFailures())
}

// A kubeconfig Secret is checked as the secret provider checks one: an
// exec plugin never runs and a refused address is never dialled.
func TestUnsafeKubeconfigsAreRefused(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, capi.Options{}) // default Safety: loopback refused
	spoke := fleet.Spokes()[0]
	marker := filepath.Join(t.TempDir(), "ran")
	createCluster(t, ns, "loopback", nil, initialized)
	createKubeconfigSecret(t, ns, "loopback", spoke.Kubeconfig)
	createCluster(t, ns, "exec", nil, initialized)
	createKubeconfigSecret(t, ns, "exec", providertest.WithExec(t, spoke.Kubeconfig, "touch "+marker))

	ev := requireEvent(t, ns, "loopback", access.ReasonUnsafeKubeconfig)
	assert.Contains(t, ev.Note, "AllowLoopback")
	assert.NotContains(t, ev.Note, "127.0.0.1")
	ev = requireEvent(t, ns, "exec", access.ReasonUnsafeKubeconfig)
	assert.Contains(t, ev.Note, "AllowExec")
	assert.Nil(t, rec.Current("loopback"))
	assert.Nil(t, rec.Current("exec"))
	assert.Contains(t, p.EngagementFailures()["exec"], access.ReasonUnsafeKubeconfig)
	assert.NoFileExists(t, marker, "the exec plugin never ran")
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(capiv1beta2.AddToScheme(s))
	return s
}

func startProvider(t *testing.T, ns string, opts capi.Options) (*capi.Provider, *fgtesting.Engagements) {
	t.Helper()
	opts.Namespace = ns
	p := capi.New(opts)
	return p, providertest.Start(t, fleet.Hub.Config, p)
}

func hubClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

func newNamespace(t *testing.T) string {
	t.Helper()
	return providertest.NewNamespace(t, hubClient(t), "capi-")
}

// initialized marks a Cluster's control plane initialized.
func initialized(cl *capiv1beta2.Cluster) {
	cl.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
}

// createCluster creates a Cluster, then writes its status with edits.
func createCluster(t *testing.T, ns, name string, labels map[string]string, status ...func(*capiv1beta2.Cluster)) *capiv1beta2.Cluster {
	t.Helper()
	cl := &capiv1beta2.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	require.NoError(t, hubClient(t).Create(t.Context(), cl))
	if len(status) > 0 {
		updateStatus(t, ns, name, status...)
	}
	return cl
}

func updateStatus(t *testing.T, ns, name string, edits ...func(*capiv1beta2.Cluster)) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cl := &capiv1beta2.Cluster{}
		require.NoError(c, hubClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cl))
		for _, edit := range edits {
			edit(cl)
		}
		require.NoError(c, hubClient(t).Status().Update(t.Context(), cl))
	}, wait, tick)
}

// createKubeconfigSecret creates the Cluster's kubeconfig Secret as
// Cluster API writes it.
func createKubeconfigSecret(t *testing.T, ns, cluster string, kubeconfig []byte) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + capi.KubeconfigSuffix,
			Labels: map[string]string{capi.ClusterNameLabel: cluster}},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{capi.KubeconfigDataKey: kubeconfig},
	}
	require.NoError(t, hubClient(t).Create(t.Context(), s))
	return s
}

// requireEvent waits for an Event with reason on the Cluster called name.
func requireEvent(t *testing.T, ns, name, reason string) eventsv1.Event {
	t.Helper()
	return providertest.RequireEvent(t, hubClient(t), ns, "Cluster", name, reason)
}

func clientCert(t *testing.T, kubeconfig []byte) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	require.NoError(t, err)
	return cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].ClientCertificateData
}
