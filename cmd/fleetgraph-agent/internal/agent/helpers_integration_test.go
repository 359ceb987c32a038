//go:build integration

package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph-agent/internal/agent"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	wait = 90 * time.Second
	tick = 200 * time.Millisecond
)

func TestMain(m *testing.M) {
	fgtesting.SetupLogs()
	os.Exit(m.Run())
}

// beaconRGD is a graph of one ConfigMap per instance, which says the
// instance's color, the cluster's name and the graph's version.
func beaconRGD(t testing.TB, name, kind, version string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	return beaconRGDReadyWhen(t, name, kind, version, "")
}

// beaconRGDReadyWhen is beaconRGD whose ConfigMap is ready only when
// readyWhen (a CEL expression over config) holds.
func beaconRGDReadyWhen(t testing.TB, name, kind, version, readyWhen string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	ready := ""
	if readyWhen != "" {
		ready = fmt.Sprintf("\n    readyWhen:\n    - ${%s}", readyWhen)
	}
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: %s
spec:
  schema:
    apiVersion: v1alpha1
    kind: %s
    spec:
      color: string | default="red"
  resources:
  - id: config%s
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-beacon
      data:
        color: ${schema.spec.color}
        cluster: ${cluster.name}
        version: %q
`, name, kind, ready, version)), rgd))
	return rgd
}

func gvkOf(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: kind}
}

func newClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return c
}

// refusal counts the hub process's attempts to reach addresses it must
// never reach, and refuses them.
type refusal struct {
	hosts    map[string]bool
	attempts atomic.Int64
}

// refusing returns cfg whose transport refuses the API servers of spokes.
func refusing(cfg *rest.Config, spokes ...*fgtesting.Cluster) (*rest.Config, *refusal) {
	r := &refusal{hosts: map[string]bool{}}
	for _, s := range spokes {
		u, err := url.Parse(s.Config.Host)
		if err == nil {
			r.hosts[u.Host] = true
		}
	}
	out := rest.CopyConfig(cfg)
	out.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if r.hosts[req.URL.Host] {
				r.attempts.Add(1)
				return nil, fmt.Errorf("the hub process may not reach %s", req.URL.Host)
			}
			return next.RoundTrip(req)
		})
	})
	return out, r
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startHub runs a Hub with pull mode on in a manager of its own for the
// hub cluster at cfg until the test ends, or stop is called.
func startHub(t testing.TB, cfg *rest.Config, provider multicluster.Provider, opts sdk.Options) (*sdk.Hub, func()) {
	t.Helper()
	opts.Pull.Enable = true
	h, err := sdk.NewHub(provider, opts)
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	require.NoError(t, h.SetupWithManager(mgr))
	stop := fgtesting.StartStoppable(t, mgr.Start)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c, err := client.New(cfg, client.Options{Scheme: fgtesting.NewScheme()})
		require.NoError(ct, err)
		assert.NoError(ct, c.List(context.Background(), &fgv1alpha1.PullClusterList{}))
		if opts.RGDs.InstallCRD {
			assert.NoError(ct, c.List(context.Background(), &v1alpha1.ResourceGraphDefinitionList{}))
		}
	}, wait, tick, "the hub installs its CRDs")
	return h, stop
}

// join registers a pull cluster as a platform does: it creates the
// PullCluster, waits for the agent's ServiceAccount, and returns a hub
// config with a short-lived token of it (kubectl create token), the
// bootstrap credential an agent starts from.
func join(t testing.TB, hubCluster *fgtesting.Cluster, name string, labels map[string]string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	c := newClient(t, hubCluster.Config)
	pc := &fgv1alpha1.PullCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	require.NoError(t, c.Create(ctx, pc))
	return bootstrapConfig(t, hubCluster, name, time.Hour)
}

// bootstrapConfig returns a hub config with a new token, of the given
// life, of the pull cluster's agent.
func bootstrapConfig(t testing.TB, hubCluster *fgtesting.Cluster, name string, life time.Duration) *rest.Config {
	t.Helper()
	cs, err := kubernetes.NewForConfig(hubCluster.Config)
	require.NoError(t, err)
	ns := fgv1alpha1.PullNamespace(name)
	var token string
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), fgv1alpha1.PullAgentName,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(life / time.Second))}},
			metav1.CreateOptions{})
		require.NoError(ct, err)
		token = tr.Status.Token
	}, wait, tick, "the hub makes the agent's ServiceAccount of %s", name)
	return &rest.Config{
		Host:            hubCluster.Config.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: hubCluster.Config.CAData},
		BearerToken:     token,
		QPS:             hubCluster.Config.QPS, Burst: hubCluster.Config.Burst,
	}
}

func ptrTo[T any](v T) *T { return &v }

// startAgent runs an agent for the named pull cluster on spoke until the
// test ends or stop is called (which waits for it to return).
func startAgent(t testing.TB, name string, hubCfg *rest.Config, spokeCluster *fgtesting.Cluster, mutate ...func(*agent.Options)) (stop func()) {
	t.Helper()
	opts := agent.Options{
		Cluster: name, Hub: hubCfg, Local: spokeCluster.Config,
		RenewInterval: 2 * time.Second, ReportInterval: 200 * time.Millisecond, SyncInterval: time.Second,
		Spoke: spoke.Options{Resync: 5 * time.Second},
	}
	for _, m := range mutate {
		m(&opts)
	}
	a, err := agent.New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := a.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("agent %s: %v", name, err)
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// instance is an instance of the graph's kind in the default namespace.
func instance(gvk schema.GroupVersionKind, name, color string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"color": color}}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

// createWhenServed creates obj once the kind is served.
func createWhenServed(t testing.TB, cfg *rest.Config, obj *unstructured.Unstructured) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c, err := client.New(cfg, client.Options{}) // a new mapper: the kind is new
		require.NoError(ct, err)
		err = c.Create(context.Background(), obj.DeepCopy())
		if err != nil && !apierrors.IsAlreadyExists(err) {
			assert.NoError(ct, err)
		}
	}, wait, tick, "creating %s %s", obj.GetKind(), obj.GetName())
}

// stateOf reads an instance's status.state ("" when absent or unread).
func stateOf(c client.Client, gvk schema.GroupVersionKind, name string) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u); err != nil {
		return ""
	}
	s, _, _ := unstructured.NestedString(u.Object, "status", "state")
	return s
}

func requireState(t testing.TB, cfg *rest.Config, gvk schema.GroupVersionKind, name, want string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c, err := client.New(cfg, client.Options{})
		require.NoError(ct, err)
		assert.Equal(ct, want, stateOf(c, gvk, name))
	}, wait, tick, "%s %s is %s", gvk.Kind, name, want)
}

// configMap reads the data of a ConfigMap in the default namespace.
func configMap(c client.Client, name string) (map[string]string, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, cm); err != nil {
		return nil, err
	}
	return cm.Data, nil
}

// clusterOf is the named cluster's entry in the graph's fleet status.
func clusterOf(st sdk.GraphStatus, name string) (sdk.ClusterStatus, bool) {
	for _, c := range st.Clusters {
		if c.Cluster == name {
			return c, true
		}
	}
	return sdk.ClusterStatus{}, false
}

// cliStatus runs `fleetgraph status <graph> -o json` against the hub, the
// binary built from this module.
func cliStatus(t testing.TB, hubCluster *fgtesting.Cluster, graphName string) *cliFleet {
	t.Helper()
	dir := t.TempDir()
	bin, kubeconfig := filepath.Join(dir, "fleetgraph"), filepath.Join(dir, "hub.kubeconfig")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/fleetgraph/fleetgraph/cmd/fleetgraph").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.WriteFile(kubeconfig, hubCluster.Kubeconfig, 0o600))
	f := &cliFleet{}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		out, err := exec.Command(bin, "--kubeconfig", kubeconfig, "status", graphName, "-o", "json").Output()
		require.NoError(ct, err)
		require.NoError(ct, json.Unmarshal(out, f))
	}, wait, tick)
	return f
}

// cliFleet is the part of `fleetgraph status -o json` the tests read.
type cliFleet struct {
	Graphs []struct {
		Name           string `json:"name"`
		ClusterCount   int32  `json:"clusterCount"`
		Established    int32  `json:"established"`
		Instances      int64  `json:"instances"`
		ReadyInstances int64  `json:"readyInstances"`
		Clusters       []struct {
			Name      string `json:"name"`
			CRD       string `json:"crd"`
			Served    int64  `json:"servedRevision"`
			Instances int64  `json:"instances"`
		} `json:"clusters"`
	} `json:"graphs"`
}

// labelledProvider labels the pushed spokes of a test provider.
type labelledProvider struct {
	*fgtesting.Provider
	labels map[string]map[string]string
}

var _ sdk.ClusterLabeler = &labelledProvider{}

func (p *labelledProvider) Labels(name multicluster.ClusterName) map[string]string {
	return p.labels[string(name)]
}
