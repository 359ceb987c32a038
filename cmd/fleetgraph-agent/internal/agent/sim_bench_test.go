//go:build integration

package agent_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// BenchmarkPullAgents runs PULL_AGENTS (default 1,000) simulated agents
// against one hub API server and one hub process (the fleetgraph-hub
// binary with --pull, so that its CPU and memory are its own). Each
// simulated agent is a goroutine that makes the agent's hub-side requests
// with the agent's pattern, on a connection of its own: it exchanges its
// bootstrap token for one of its own, lists and watches its assignments,
// renews its Lease every 10 s, and writes its report twice when an
// assignment changes (the revision acted on, then served). It measures the
// hub API server's and the hub's CPU and memory at rest and while a new
// revision reaches every cluster. Run it with
// `go test -tags integration -run '^$' -bench PullAgents -benchtime 1x -timeout 60m`.
func BenchmarkPullAgents(b *testing.B) {
	n := 1000
	if s := os.Getenv("PULL_AGENTS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(b, err)
	}
	for range b.N {
		runPullAgents(b, n)
	}
}

func runPullAgents(b *testing.B, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	window := loadWindow(b)
	fleet := fgtesting.StartFleet(b, 0)
	apiPID, err := apiServerPID(fleet.Hub)
	require.NoError(b, err)
	hubPID := startHubBinary(b, fleet.Hub)
	admin := newClient(b, fleet.Hub.Config)
	require.EventuallyWithT(b, func(ct *assert.CollectT) {
		assert.NoError(ct, newClient(b, fleet.Hub.Config).List(ctx, &fgv1alpha1.PullClusterList{}))
	}, wait, tick, "the hub installs the pull CRDs")
	apiStart, _ := usageOf(apiPID)
	hubStart, _ := usageOf(hubPID)

	// Join: n PullClusters, each registered by the hub.
	start := time.Now()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("edge-%04d", i)
	}
	parallelDo(b, names, 16, func(name string) error {
		return admin.Create(ctx, &fgv1alpha1.PullCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	cs, err := kubernetes.NewForConfig(fleet.Hub.Config)
	require.NoError(b, err)
	tokens := make(map[string]string, n)
	var tmu sync.Mutex
	parallelDo(b, names, 16, func(name string) error {
		return retry(ctx, simPatience, func() error {
			tr, err := cs.CoreV1().ServiceAccounts(fgv1alpha1.PullNamespace(name)).CreateToken(ctx, fgv1alpha1.PullAgentName,
				&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			tmu.Lock()
			tokens[name] = tr.Status.Token
			tmu.Unlock()
			return nil
		})
	})
	joined := time.Since(start)

	// The agents start over a minute and a half (PULL_RAMP seconds), as a
	// fleet's agents would not all start in one instant.
	ramp := 90 * time.Second
	if v := os.Getenv("PULL_RAMP"); v != "" {
		secs, err := strconv.Atoi(v)
		require.NoError(b, err)
		ramp = time.Duration(secs) * time.Second
	}
	counter := &requestCounter{}
	agents := make([]*simAgent, n)
	start = time.Now()
	var wg sync.WaitGroup
	for i, name := range names {
		agents[i] = &simAgent{name: name}
		wg.Go(func() {
			time.Sleep(time.Duration(i) * ramp / time.Duration(n))
			if err := agents[i].start(ctx, fleet.Hub, tokens[name], counter); err != nil {
				b.Errorf("agent %s: %v", name, err)
			}
		})
	}
	wg.Wait()
	require.False(b, b.Failed())
	applyGlow(b, fleet.Hub.Config, "1")
	requireAllServe(b, agents, 1)
	firstServed := time.Since(start)

	// At rest.
	counter.take()
	api0, _ := usageOf(apiPID)
	hub0, _ := usageOf(hubPID)
	time.Sleep(window) // the window is what is measured
	api1, _ := usageOf(apiPID)
	hub1, _ := usageOf(hubPID)
	_, restTotal := counter.take()

	// A new revision reaches every cluster.
	start = time.Now()
	applyGlow(b, fleet.Hub.Config, "2")
	requireAllServe(b, agents, 2)
	reached := time.Since(start)
	time.Sleep(time.Until(start.Add(window)))
	api2, _ := usageOf(apiPID)
	hub2, _ := usageOf(hubPID)
	rollout, rolloutTotal := counter.take()

	b.ReportMetric(float64(restTotal)/window.Minutes(), "agent-req/min-rest")
	b.ReportMetric(float64(rolloutTotal)/window.Minutes(), "agent-req/min-rollout")
	b.ReportMetric(reached.Seconds(), "s-all-serve-rev2")
	b.ReportMetric(cpuShare(api0, api1, window), "apiserver-cores-rest")
	b.ReportMetric(cpuShare(hub0, hub1, window), "hub-cores-rest")
	b.ReportMetric(cpuShare(api1, api2, window), "apiserver-cores-rollout")
	b.ReportMetric(cpuShare(hub1, hub2, window), "hub-cores-rollout")
	b.ReportMetric(mib(api2.rss), "apiserver-MiB")
	b.ReportMetric(mib(hub2.rss), "hub-MiB")
	b.Logf("%d agents: joined in %s (PullClusters created, registered, bootstrap tokens issued), all serving revision 1 %s after the first agent started",
		n, joined.Round(time.Second), firstServed.Round(time.Second))
	b.Logf("hub API server: %.0f MiB RSS (peak %.0f MiB), %.2f cores at rest, %.2f cores in the rollout's %s; CPU since the hub started %s",
		mib(api2.rss), mib(api2.hwm), cpuShare(api0, api1, window), cpuShare(api1, api2, window), window, (api2.cpu - apiStart.cpu).Round(time.Second))
	b.Logf("hub process: %.0f MiB RSS (peak %.0f MiB), %.2f cores at rest, %.2f cores in the rollout's %s; CPU since it started %s",
		mib(hub2.rss), mib(hub2.hwm), cpuShare(hub0, hub1, window), cpuShare(hub1, hub2, window), window, (hub2.cpu - hubStart.cpu).Round(time.Second))
	b.Logf("agents' requests: %d/min at rest; in the rollout's %s (all served after %s): %s",
		int(float64(restTotal)/window.Minutes()), window, reached.Round(100*time.Millisecond), describeCounts(rollout))
}

// startHubBinary builds fleetgraph-hub and runs it with --pull against the
// hub cluster until the test ends; it returns its process ID.
func startHubBinary(b testing.TB, hubCluster *fgtesting.Cluster) int {
	b.Helper()
	dir := b.TempDir()
	bin, kubeconfig := filepath.Join(dir, "fleetgraph-hub"), filepath.Join(dir, "hub.kubeconfig")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/fleetgraph/fleetgraph/cmd/fleetgraph-hub").CombinedOutput()
	require.NoError(b, err, "%s", out)
	require.NoError(b, os.WriteFile(kubeconfig, hubCluster.Kubeconfig, 0o600))
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--pull", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	logs, err := os.Create(filepath.Join(dir, "hub.log"))
	require.NoError(b, err)
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if b.Failed() {
			if raw, err := os.ReadFile(logs.Name()); err == nil && len(raw) > 0 {
				b.Logf("hub log (last 4 KiB):\n%s", raw[max(0, len(raw)-4096):])
			}
		}
	})
	return cmd.Process.Pid
}

// applyGlow creates or updates the RGD "glow" at the given version.
func applyGlow(b testing.TB, cfg *rest.Config, version string) {
	b.Helper()
	rgd := beaconRGD(b, "glow", "Glow", version)
	u := &unstructured.Unstructured{}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rgd)
	require.NoError(b, err)
	u.Object = content
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "ResourceGraphDefinition"})
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	require.EventuallyWithT(b, func(ct *assert.CollectT) {
		c, err := client.New(cfg, client.Options{})
		require.NoError(ct, err)
		assert.NoError(ct, c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner("bench"), client.ForceOwnership))
	}, wait, tick)
}

func requireAllServe(b testing.TB, agents []*simAgent, rev int64) {
	b.Helper()
	require.EventuallyWithT(b, func(ct *assert.CollectT) {
		behind := 0
		for _, a := range agents {
			if a.served.Load() != rev {
				behind++
			}
		}
		assert.Zero(ct, behind, "agents not serving revision %d", rev)
	}, 10*wait, time.Second, "every agent serves revision %d", rev)
}

// simAgent makes an agent's requests to the hub, and nothing else.
type simAgent struct {
	name   string
	c      client.Client
	served atomic.Int64
	mu     sync.Mutex
	acted  int64 // the generation of the assignment last acted on
}

// start exchanges the bootstrap token, starts the watch of the agent's
// assignments and its heartbeat; it returns once the watch has listed.
// Everything goes over one connection of the agent's own, as for an agent.
func (a *simAgent) start(ctx context.Context, hubCluster *fgtesting.Cluster, bootstrap string, counter *requestCounter) error {
	ns := fgv1alpha1.PullNamespace(a.name)
	var token atomic.Pointer[string]
	token.Store(&bootstrap)
	cfg := &rest.Config{
		Host: hubCluster.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: hubCluster.Config.CAData},
		QPS: 5, Burst: 10,
		Dial: (&net.Dialer{}).DialContext, // a connection of its own, as each agent has
	}
	cfg.Wrap(counter.wrap)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			r := req.Clone(req.Context())
			r.Header.Set("Authorization", "Bearer "+*token.Load())
			return next.RoundTrip(r)
		})
	})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{fgv1alpha1.AddToScheme, coordinationv1.AddToScheme, corev1.AddToScheme, authenticationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphAssignmentKind), fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphAssignmentKind + "List"),
		fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphReportKind), coordinationv1.SchemeGroupVersion.WithKind("Lease"),
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	if a.c, err = client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: hc}); err != nil {
		return err
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(86400))}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fgv1alpha1.PullAgentName}}
	if err := retry(ctx, simPatience, func() error {
		return bounded(ctx, func(ctx context.Context) error { return a.c.SubResource("token").Create(ctx, sa, req) })
	}); err != nil {
		return fmt.Errorf("exchanging the bootstrap token: %w", err)
	}
	token.Store(&req.Status.Token)
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme, Mapper: mapper, HTTPClient: hc, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return err
	}
	inf, err := ca.GetInformer(ctx, &fgv1alpha1.GraphAssignment{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	act := func(obj any) {
		if asg, ok := obj.(*fgv1alpha1.GraphAssignment); ok {
			go a.act(ctx, asg)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: act, UpdateFunc: func(_, o any) { act(o) }}); err != nil {
		return err
	}
	go func() { _ = ca.Start(ctx) }()
	go a.heartbeat(ctx, ns)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	return nil
}

// simPatience bounds a simulated agent's retries of one step.
const simPatience = 10 * time.Minute

// bounded runs f with a request timeout, as the agent's requests have.
func bounded(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return f(ctx)
}

// act reports an assignment twice, as the agent does: the revision acted
// on, then served.
func (a *simAgent) act(ctx context.Context, asg *fgv1alpha1.GraphAssignment) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if asg.Generation <= a.acted {
		return
	}
	st := fgv1alpha1.GraphReportStatus{
		ObservedGeneration: asg.Generation, AssignedRevision: asg.Spec.Revision,
		CRD: fgv1alpha1.ReportedCRD{State: "Pending", Revision: asg.Spec.Revision, Generation: asg.Spec.Snapshot.Generation},
	}
	if a.report(ctx, asg, st) != nil {
		return
	}
	st.CRD.State = "Established"
	st.Served = &fgv1alpha1.ReportedRevision{Revision: asg.Spec.Revision, Generation: asg.Spec.Snapshot.Generation}
	st.Instances = fgv1alpha1.ReportedInstances{Counted: true}
	if a.report(ctx, asg, st) != nil {
		return
	}
	a.acted = asg.Generation
	a.served.Store(asg.Spec.Revision)
}

func (a *simAgent) report(ctx context.Context, asg *fgv1alpha1.GraphAssignment, st fgv1alpha1.GraphReportStatus) error {
	st.Time = metav1.Now()
	rep := &fgv1alpha1.GraphReport{
		TypeMeta:   metav1.TypeMeta{APIVersion: fgv1alpha1.GroupVersion.String(), Kind: fgv1alpha1.GraphReportKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: asg.Namespace, Name: asg.Name},
		Status:     st,
	}
	u, err := applyIntent(rep)
	if err != nil {
		return err
	}
	return retry(ctx, simPatience, func() error {
		return bounded(ctx, func(ctx context.Context) error {
			return a.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("fleetgraph-agent"), client.ForceOwnership)
		})
	})
}

// heartbeat renews the Lease every 10 s, from a random first instant.
func (a *simAgent) heartbeat(ctx context.Context, ns string) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(rand.N(10 * time.Second)):
	}
	every := time.NewTicker(10 * time.Second)
	defer every.Stop()
	for {
		now := metav1.NewMicroTime(time.Now())
		l := &coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fgv1alpha1.PullAgentName},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptrTo(a.name), LeaseDurationSeconds: ptrTo(int32(30)), RenewTime: &now},
		}
		if u, err := applyIntent(l); err == nil {
			_ = bounded(ctx, func(ctx context.Context) error {
				return a.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("fleetgraph-agent"), client.ForceOwnership)
			})
		}
		select {
		case <-ctx.Done():
			return
		case <-every.C:
		}
	}
}

func applyIntent(obj runtime.Object) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// retry calls f until it succeeds or within passes.
func retry(ctx context.Context, within time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// parallelDo runs f on every item, width at once, and fails on any error.
func parallelDo(b testing.TB, items []string, width int, f func(string) error) {
	b.Helper()
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(it); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("%s: %w", it, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.NoError(b, first)
}
