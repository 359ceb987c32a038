//go:build integration

package secret_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	wait = 60 * time.Second
	tick = 100 * time.Millisecond
)

var fleet *fgtesting.Fleet

// onLoopback lets the provider dial the test fleet's API servers, which
// listen on 127.0.0.1 only; it refuses loopback addresses by default.
var onLoopback = secret.Safety{AllowLoopback: true}

// logs holds everything the provider logged, to check it for credentials.
var logs = &syncBuffer{}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// assertNoCredentialsLogged checks that nothing of kubeconfig's credentials
// (nor any of the extra strings) appears in the logs.
func assertNoCredentialsLogged(t *testing.T, kubeconfig []byte, extra ...string) {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	require.NoError(t, err)
	for _, u := range cfg.AuthInfos {
		for _, v := range [][]byte{u.ClientKeyData, u.ClientCertificateData, []byte(u.Token)} {
			if len(v) > 0 {
				assert.NotContains(t, logs.String(), string(v))
				assert.NotContains(t, logs.String(), base64.StdEncoding.EncodeToString(v))
			}
		}
	}
	for _, s := range extra {
		assert.NotContains(t, logs.String(), s)
	}
}

func TestMain(m *testing.M) {
	log.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
	f, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fleet = f
	code := m.Run()
	if err := f.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

func TestSecretsEngageTheirClusters(t *testing.T) {
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, secret.Options{Safety: onLoopback})
	spokes := fleet.Spokes()

	for _, s := range spokes {
		createSecret(t, ns, s.Name, s.Kubeconfig, map[string]string{secret.LabelPrefix + "spoke": s.Name})
	}

	for _, s := range spokes {
		name := multicluster.ClusterName(s.Name)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			e := rec.current(name)
			if assert.NotNil(c, e, "cluster %s engaged", name) {
				assert.Equal(c, hostOf(s), e.host)
			}
		}, wait, tick)
		assert.Equal(t, map[string]string{"spoke": s.Name}, p.Labels(name))
		cl, err := p.Get(t.Context(), name)
		require.NoError(t, err)
		nss := &corev1.NamespaceList{}
		require.NoError(t, cl.GetClient().List(t.Context(), nss), "the engaged cluster's client works")
		assertCacheTrimmed(t, nss.Items)
		assertEvent(t, ns, s.Name, secret.ReasonEngaged)
	}
	assert.Equal(t, []multicluster.ClusterName{"spoke-1", "spoke-2"}, p.ClusterNames())
}

func TestEngagedClusterFeedsAMulticlusterController(t *testing.T) {
	ns := newNamespace(t)
	spoke := fleet.Spokes()[0]
	probe := "probe-" + ns
	var mu sync.Mutex
	var seen []mcreconcile.Request
	_, _ = startProvider(t, ns, secret.Options{Safety: onLoopback}, func(mgr mcmanager.Manager) {
		err := mcbuilder.ControllerManagedBy(mgr).Named("configmaps-" + ns).For(&corev1.ConfigMap{}).
			Complete(mcreconcile.Func(func(_ context.Context, req mcreconcile.Request) (reconcile.Result, error) {
				if req.Name == probe {
					mu.Lock()
					seen = append(seen, req)
					mu.Unlock()
				}
				return reconcile.Result{}, nil
			}))
		require.NoError(t, err)
	})
	createSecret(t, ns, "watched", spoke.Kubeconfig, nil)

	spokeClient, err := client.New(spoke.Config, client.Options{})
	require.NoError(t, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: probe}}
	require.NoError(t, spokeClient.Create(t.Context(), cm))
	t.Cleanup(func() { _ = spokeClient.Delete(context.Background(), cm) })

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		assert.Contains(c, seen, mcreconcile.Request{ClusterName: "watched",
			Request: reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cm)}})
	}, wait, tick, "the controller reconciles the spoke's ConfigMap under the Secret's cluster name")
}

func TestClusterNameAnnotationAndLabelUpdates(t *testing.T) {
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, secret.Options{Safety: onLoopback})
	spoke := fleet.Spokes()[0]
	s := newSecret(ns, "creds", spoke.Kubeconfig, map[string]string{secret.LabelPrefix + "tier": "gold"})
	s.Annotations = map[string]string{secret.ClusterNameAnnotation: "eu-1"}
	require.NoError(t, hubClient(t).Create(t.Context(), s))

	require.Eventually(t, func() bool { return rec.current("eu-1") != nil }, wait, tick)
	first := rec.current("eu-1")
	notices := make(chan string, 10)
	p.NotifyLabelsChanged(func(name multicluster.ClusterName) {
		notices <- string(name) + ":" + p.Labels(name)["tier"]
	})

	s.Labels[secret.LabelPrefix+"tier"] = "silver"
	require.NoError(t, hubClient(t).Update(t.Context(), s))

	require.Eventually(t, func() bool { return p.Labels("eu-1")["tier"] == "silver" }, wait, tick)
	assert.Same(t, first, rec.current("eu-1"), "a label change does not re-engage")
	assert.NoError(t, first.ctx.Err())
	select {
	case got := <-notices:
		assert.Equal(t, "eu-1:silver", got, "the notice comes once Labels gives the new labels")
	case <-time.After(wait):
		t.Fatal("no notice of the relabel")
	}
}

func TestDuplicateClusterNamesAreReported(t *testing.T) {
	ns := newNamespace(t)
	_, rec := startProvider(t, ns, secret.Options{Safety: onLoopback})
	one, two := fleet.Spokes()[0], fleet.Spokes()[1]
	first := newSecret(ns, "first", one.Kubeconfig, nil)
	first.Annotations = map[string]string{secret.ClusterNameAnnotation: "shared"}
	require.NoError(t, hubClient(t).Create(t.Context(), first))
	require.Eventually(t, func() bool { return rec.current("shared") != nil }, wait, tick)

	second := newSecret(ns, "second", two.Kubeconfig, nil)
	second.Annotations = map[string]string{secret.ClusterNameAnnotation: "shared"}
	require.NoError(t, hubClient(t).Create(t.Context(), second))

	assertEvent(t, ns, "second", secret.ReasonDuplicateName)
	assert.Equal(t, hostOf(one), rec.current("shared").host, "the first Secret keeps the name")
	assert.Equal(t, 1, rec.engagements("shared"))
}

func TestSecretThatLosesItsLabelDisengages(t *testing.T) {
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, secret.Options{Safety: onLoopback})
	s := createSecret(t, ns, "labelled", fleet.Spokes()[0].Kubeconfig, nil)
	require.Eventually(t, func() bool { return rec.current("labelled") != nil }, wait, tick)
	e := rec.current("labelled")

	delete(s.Labels, secret.DefaultSecretLabel)
	require.NoError(t, hubClient(t).Update(t.Context(), s))

	require.Eventually(t, func() bool { return e.ctx.Err() != nil }, wait, tick)
	assert.Empty(t, p.ClusterNames())
}

func TestRotatedKubeconfigReengages(t *testing.T) {
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, secret.Options{Safety: onLoopback})
	one, two := fleet.Spokes()[0], fleet.Spokes()[1]
	s := createSecret(t, ns, "moving", one.Kubeconfig, nil)
	require.Eventually(t, func() bool { return rec.current("moving") != nil }, wait, tick)
	old := rec.current("moving")
	require.Equal(t, hostOf(one), old.host)

	s.Data[secret.DefaultDataKey] = two.Kubeconfig
	require.NoError(t, hubClient(t).Update(t.Context(), s))

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		e := rec.current("moving")
		if assert.NotNil(c, e) {
			assert.Equal(c, hostOf(two), e.host)
		}
	}, wait, tick)
	assert.Error(t, old.ctx.Err(), "the old engagement was cancelled")
	assert.NoError(t, rec.current("moving").ctx.Err())
	cl, err := p.Get(t.Context(), "moving")
	require.NoError(t, err)
	assert.Equal(t, hostOf(two), strings.TrimSuffix(cl.GetConfig().Host, "/"))
	assert.Equal(t, 2, rec.engagements("moving"))
}

func TestDeletedSecretDisengagesWithoutLeaks(t *testing.T) {
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, secret.Options{Safety: onLoopback})
	spoke := fleet.Spokes()[0]
	cycle := func(name string) {
		s := createSecret(t, ns, name, spoke.Kubeconfig, nil)
		require.Eventually(t, func() bool { return rec.current(multicluster.ClusterName(name)) != nil }, wait, tick)
		e := rec.current(multicluster.ClusterName(name))
		assertEvent(t, ns, name, secret.ReasonEngaged)

		require.NoError(t, hubClient(t).Delete(t.Context(), s))

		require.Eventually(t, func() bool { return e.ctx.Err() != nil }, wait, tick, "engagement cancelled")
		require.Eventually(t, func() bool {
			_, err := p.Get(t.Context(), multicluster.ClusterName(name))
			return err != nil
		}, wait, tick)
		_, err := p.Get(t.Context(), multicluster.ClusterName(name))
		assert.ErrorIs(t, err, multicluster.ErrClusterNotFound)
		assert.Empty(t, p.ClusterNames())
	}
	// The first cycle warms up what is created once per process (event
	// broadcaster, transport caches); the second must leave nothing behind.
	cycle("first")
	before := goleak.IgnoreCurrent()
	cycle("second")
	goleak.VerifyNone(t, before)
}

func TestExecPluginIsRefusedAndNeverRun(t *testing.T) {
	ns := newNamespace(t)
	p, rec := startProvider(t, ns, secret.Options{Safety: onLoopback})
	one, two := fleet.Spokes()[0], fleet.Spokes()[1]
	marker := filepath.Join(t.TempDir(), "ran")
	createSecret(t, ns, "exec", withExec(t, one.Kubeconfig, "touch "+marker), nil)
	createSecret(t, ns, "good", two.Kubeconfig, nil)

	require.Eventually(t, func() bool { return rec.current("good") != nil }, wait, tick)
	ev := assertEvent(t, ns, "exec", secret.ReasonUnsafeKubeconfig)
	assert.Contains(t, ev.Note, "exec")
	assert.NotContains(t, ev.Note, marker)
	assert.Nil(t, rec.current("exec"))
	_, err := p.Get(t.Context(), "exec")
	assert.ErrorIs(t, err, multicluster.ErrClusterNotFound)
	assert.NoFileExists(t, marker, "the exec plugin never ran")
	assertNoCredentialsLogged(t, one.Kubeconfig, marker)
	assertNoCredentialsLogged(t, two.Kubeconfig)
	assert.Contains(t, logs.String(), "UnsafeKubeconfig", "the refusal is logged")
}

func TestBadKubeconfigsAreReportedAndOthersKeepWorking(t *testing.T) {
	ns := newNamespace(t)
	_, rec := startProvider(t, ns, secret.Options{ConnectTimeout: 2 * time.Second, Safety: onLoopback})
	spoke := fleet.Spokes()[0]
	createSecret(t, ns, "garbage", []byte("this: is: not [a kubeconfig"), nil)
	missing := newSecret(ns, "missing", nil, nil)
	missing.Data = map[string][]byte{"other-key": spoke.Kubeconfig}
	require.NoError(t, hubClient(t).Create(t.Context(), missing))
	createSecret(t, ns, "unreachable", withServer(t, spoke.Kubeconfig, "https://127.0.0.1:1"), nil)
	createSecret(t, ns, "good", spoke.Kubeconfig, nil)

	require.Eventually(t, func() bool { return rec.current("good") != nil }, wait, tick)
	assertEvent(t, ns, "garbage", secret.ReasonInvalidKubeconfig)
	assertEvent(t, ns, "missing", secret.ReasonMissingKubeconfig)
	assertEvent(t, ns, "unreachable", secret.ReasonUnreachable)
	for _, name := range []multicluster.ClusterName{"garbage", "missing", "unreachable"} {
		assert.Nil(t, rec.current(name), name)
	}
	assertNoCredentialsLogged(t, spoke.Kubeconfig)
}

// By default a kubeconfig aimed at loopback, or at the cloud's metadata
// address, is refused as unsafe, naming the option that would accept it
// but not the address, and the server never sees a connection.
func TestRefusedAddressesAreNeverDialled(t *testing.T) {
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
	_, rec := startProvider(t, ns, secret.Options{})
	createSecret(t, ns, "loopback", kubeconfigFor(t, srv), nil)
	createSecret(t, ns, "metadata", withServer(t, fleet.Spokes()[0].Kubeconfig, "https://169.254.169.254"), nil)

	ev := assertEvent(t, ns, "loopback", secret.ReasonUnsafeKubeconfig)
	assert.Contains(t, ev.Note, "AllowLoopback")
	assert.NotContains(t, ev.Note, "127.0.0.1")
	ev = assertEvent(t, ns, "metadata", secret.ReasonUnsafeKubeconfig)
	assert.Contains(t, ev.Note, "AllowLinkLocal")
	assert.NotContains(t, ev.Note, "169.254")
	assert.Zero(t, conns.Load(), "the refused server saw no connection")
	assert.Nil(t, rec.current("loopback"))
	assert.Nil(t, rec.current("metadata"))
}

// What a server answers never reaches the Secret's events: an answer to
// discovery with a body and a reason phrase of the server's choosing is
// reported by its status code alone.
func TestProbeEventsCarryNoResponseBody(t *testing.T) {
	ns := newNamespace(t)
	const body, phrase = "BODY-f0f1f2 internal details, token=s3cr3t", "PHRASE-e4e5e6 pick me"
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 500 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			phrase, len(body), body)
		_ = buf.Flush()
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, _ = startProvider(t, ns, secret.Options{ConnectTimeout: 2 * time.Second, Safety: onLoopback})

	createSecret(t, ns, "chatty", kubeconfigFor(t, srv), nil)

	ev := assertEvent(t, ns, "chatty", secret.ReasonUnreachable)
	assert.Contains(t, ev.Note, "500 Internal Server Error")
	for _, s := range []string{"BODY-f0f1f2", "PHRASE-e4e5e6", "s3cr3t"} {
		assert.NotContains(t, ev.Note, s)
		assert.NotContains(t, logs.String(), s)
	}
}

// kubeconfigFor is a kubeconfig for srv, trusting its certificate.
func kubeconfigFor(t *testing.T, srv *httptest.Server) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["srv"] = &clientcmdapi.Cluster{Server: srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: "t0ken"}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "srv", AuthInfo: "user"}
	cfg.CurrentContext = "ctx"
	out, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return out
}

// engagement is one Engage call seen by the recorder.
type engagement struct {
	ctx  context.Context
	host string
	cl   cluster.Cluster
}

// recorder is a multicluster-aware runnable that records Engage calls.
type recorder struct {
	mu     sync.Mutex
	byName map[multicluster.ClusterName][]*engagement
}

func (r *recorder) Start(ctx context.Context) error { <-ctx.Done(); return nil }

func (r *recorder) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byName[name] = append(r.byName[name], &engagement{ctx: ctx, host: strings.TrimSuffix(cl.GetConfig().Host, "/"), cl: cl})
	return nil
}

// current returns the latest engagement of name if its context is live.
func (r *recorder) current(name multicluster.ClusterName) *engagement {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.byName[name]
	if len(all) == 0 || all[len(all)-1].ctx.Err() != nil {
		return nil
	}
	return all[len(all)-1]
}

func (r *recorder) engagements(name multicluster.ClusterName) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byName[name])
}

// startProvider runs a hub manager with a secret provider reading ns, and a
// recorder of its Engage calls, until the test ends.
func startProvider(t *testing.T, ns string, opts secret.Options, setup ...func(mcmanager.Manager)) (*secret.Provider, *recorder) {
	t.Helper()
	opts.Namespace = ns
	p := secret.New(opts)
	mgr, err := mcmanager.New(fleet.Hub.Config, p, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, p.SetupWithManager(mgr))
	rec := &recorder{byName: map[multicluster.ClusterName][]*engagement{}}
	require.NoError(t, mgr.Add(rec))
	for _, f := range setup {
		f(mgr)
	}

	fgtesting.Start(t, mgr.Start)
	return p, rec
}

func hostOf(c *fgtesting.Cluster) string { return strings.TrimSuffix(c.Config.Host, "/") }

func hubClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(fleet.Hub.Config, client.Options{})
	require.NoError(t, err)
	return c
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "secret-provider-"}}
	require.NoError(t, hubClient(t).Create(t.Context(), ns))
	return ns.Name
}

func newSecret(ns, name string, kubeconfig []byte, labels map[string]string) *corev1.Secret {
	l := map[string]string{secret.DefaultSecretLabel: "true"}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l},
		Data:       map[string][]byte{secret.DefaultDataKey: kubeconfig},
	}
}

func createSecret(t *testing.T, ns, name string, kubeconfig []byte, labels map[string]string) *corev1.Secret {
	t.Helper()
	s := newSecret(ns, name, kubeconfig, labels)
	require.NoError(t, hubClient(t).Create(t.Context(), s))
	return s
}

// assertEvent waits for an Event with reason on the Secret called name.
func assertEvent(t *testing.T, ns, name, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list := &eventsv1.EventList{}
		assert.NoError(c, hubClient(t).List(t.Context(), list, client.InNamespace(ns)))
		for _, ev := range list.Items {
			if ev.Regarding.Kind == "Secret" && ev.Regarding.Name == name && ev.Reason == reason {
				found = ev
				return
			}
		}
		assert.Fail(c, "no event", "reason %s on Secret %s/%s", reason, ns, name)
	}, wait, tick)
	return found
}

// withExec rewrites a kubeconfig to authenticate with an exec plugin that
// runs script with sh.
func withExec(t *testing.T, kubeconfig []byte, script string) []byte {
	return editKubeconfig(t, kubeconfig, func(cfg *clientcmdapi.Config) {
		for _, u := range cfg.AuthInfos {
			u.ClientCertificateData, u.ClientKeyData, u.Token = nil, nil, ""
			u.Exec = &clientcmdapi.ExecConfig{
				Command: "sh", Args: []string{"-c", script},
				APIVersion:      "client.authentication.k8s.io/v1",
				InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
			}
		}
	})
}

func withServer(t *testing.T, kubeconfig []byte, server string) []byte {
	return editKubeconfig(t, kubeconfig, func(cfg *clientcmdapi.Config) {
		for _, c := range cfg.Clusters {
			c.Server = server
		}
	})
}

func editKubeconfig(t *testing.T, kubeconfig []byte, edit func(*clientcmdapi.Config)) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	require.NoError(t, err)
	edit(cfg)
	out, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return out
}

// assertCacheTrimmed checks that objects read from an engaged cluster's
// cache name their managers but carry no managed field sets.
func assertCacheTrimmed(t *testing.T, items []corev1.Namespace) {
	t.Helper()
	managers := 0
	for _, o := range items {
		for _, mf := range o.ManagedFields {
			managers++
			assert.NotEmpty(t, mf.Manager, "namespace %s", o.Name)
			assert.Nil(t, mf.FieldsV1, "namespace %s: field set of %s kept in the cache", o.Name, mf.Manager)
		}
	}
	assert.Positive(t, managers, "the cached namespaces name their managers")
}
