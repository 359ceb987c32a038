// Package providertest holds what the integration tests of fleetgraph's
// providers share: a hub manager running a provider, waits for an
// engagement or an Event, and kubeconfigs that would run a program.
package providertest

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// Wait and Tick bound and pace every wait of these helpers.
const (
	Wait = 60 * time.Second
	Tick = 50 * time.Millisecond
)

// Provider is a fleetgraph provider: set up on a manager, then started
// by it.
type Provider interface {
	multicluster.Provider
	SetupWithManager(mcmanager.Manager) error
}

// Start runs a hub manager on hub with p until the test ends, and returns
// the record of p's engagements.
func Start(t *testing.T, hub *rest.Config, p Provider) *fgtesting.Engagements {
	t.Helper()
	mgr, err := mcmanager.New(hub, p, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, p.SetupWithManager(mgr))
	rec := fgtesting.NewEngagements()
	require.NoError(t, mgr.Add(rec))
	fgtesting.Start(t, mgr.Start)
	return rec
}

// NewNamespace creates a namespace named from prefix.
func NewNamespace(t *testing.T, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	require.NoError(t, c.Create(t.Context(), ns))
	return ns.Name
}

// Host is the server URL of c, as an engagement records it.
func Host(c *fgtesting.Cluster) string { return strings.TrimSuffix(c.Config.Host, "/") }

// RequireEngagedWith waits until the cluster called name is engaged with
// spoke's server, and returns that engagement.
func RequireEngagedWith(t *testing.T, rec *fgtesting.Engagements, name multicluster.ClusterName, spoke *fgtesting.Cluster) *fgtesting.Engagement {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		e := rec.Current(name)
		if assert.NotNil(c, e, "cluster %s engaged", name) {
			assert.Equal(c, Host(spoke), e.Host)
		}
	}, Wait, Tick)
	return rec.Current(name)
}

// RequireEvent waits for an Event with reason on the object of kind called
// name in ns, whose note contains each of notes.
func RequireEvent(t *testing.T, c client.Client, ns, kind, name, reason string, notes ...string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		list := &eventsv1.EventList{}
		assert.NoError(ct, c.List(t.Context(), list, client.InNamespace(ns)))
		for _, ev := range list.Items {
			if ev.Regarding.Kind == kind && ev.Regarding.Name == name && ev.Reason == reason && containsAll(ev.Note, notes) {
				found = ev
				return
			}
		}
		assert.Fail(ct, "no event", "reason %s on %s %s/%s with %q", reason, kind, ns, name, notes)
	}, Wait, Tick)
	return found
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// WithExec rewrites a kubeconfig to authenticate with an exec plugin that
// runs script with sh.
func WithExec(t *testing.T, kubeconfig []byte, script string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	require.NoError(t, err)
	for _, u := range cfg.AuthInfos {
		u.ClientCertificateData, u.ClientKeyData, u.Token = nil, nil, ""
		u.Exec = &clientcmdapi.ExecConfig{Command: "sh", Args: []string{"-c", script},
			APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	}
	out, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return out
}

// Buffer is a log sink safe for concurrent use, to check what a provider
// logged (that no credential is in it).
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
