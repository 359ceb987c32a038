//go:build integration

package krodiff

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The hub logs through controller-runtime; its logs are not what this test
// compares.
func init() { log.SetLogger(logr.Discard()) }

// minBehaviourCases is the least number of RGD+instance pairs compared.
const minBehaviourCases = 15

// stablePolls is how many polls in a row must show the same, covered,
// differences before they count as final.
const stablePolls = 4

// settle bounds how long both implementations get to agree on every case
// (all cases run at once).
const settle = 90 * time.Second

// side is one implementation with its own API server.
type side struct {
	name   string
	dyn    dynamic.Interface
	kube   kubernetes.Interface
	mapper meta.ResettableRESTMapper
}

// TestBehaviourAgainstKro applies the same RGDs and instances to kro's
// controller (v0.9.4, on one API server) and to fleetgraph's hub in
// single-cluster mode (on another), and compares the children and the
// instance status each produces.
func TestBehaviourAgainstKro(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "behaviour", "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), minBehaviourCases)
	cases := make([]*Case, 0, len(files))
	for _, f := range files {
		c, err := ReadCase(f)
		require.NoError(t, err)
		cases = append(cases, c)
	}
	assertBehaviourTableNamesCases(t, cases)

	kro, fg := startSides(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, s := range []*side{kro, fg} {
		go runWidgetController(ctx, s.dyn)
		for _, c := range cases {
			require.NoError(t, s.apply(ctx, c), "%s: %s", s.name, c.Name)
		}
	}

	applied := compareUntilSettled(t, kro, fg, cases, phaseApply)
	var updatable []*Case
	for _, c := range cases {
		if c.Update != nil {
			updatable = append(updatable, c)
		}
	}
	for _, s := range []*side{kro, fg} {
		for _, c := range updatable {
			require.NoError(t, s.updateInstance(ctx, c), "%s: %s", s.name, c.Name)
		}
	}
	updated := compareUntilSettled(t, kro, fg, updatable, phaseUpdate)
	for _, s := range []*side{kro, fg} {
		for _, c := range cases {
			require.NoError(t, s.deleteInstance(ctx, c), "%s: %s", s.name, c.Name)
		}
	}
	deleted := compareUntilSettled(t, kro, fg, cases, phaseDelete)

	results := make([]Result, 0, 3*len(cases))
	for _, c := range cases {
		for _, ph := range []struct {
			phase phase
			diffs map[string][]string
		}{{phaseApply, applied}, {phaseUpdate, updated}, {phaseDelete, deleted}} {
			if ph.phase == phaseUpdate && c.Update == nil {
				continue
			}
			key := ph.phase.key(c)
			r := Classify(key, ph.diffs[key], KnownBehaviourDifferences)
			results = append(results, r)
			t.Run(key, func(t *testing.T) { reportResult(t, r, "testdata/behaviour/"+c.Name+".yaml") })
		}
	}
	fmt.Printf("krodiff behaviour: %d cases, comparisons (apply, update, delete) %s\n", len(cases), Count(results))
}

// phase is what the test has done to every case's instance.
type phase string

const (
	// phaseApply: created; both sides must make the same children and
	// status.
	phaseApply phase = ""
	// phaseUpdate: the instance's spec patched (cases with an
	// InstanceUpdate); both sides must converge to the same children and
	// status, pruning alike.
	phaseUpdate phase = "update/"
	// phaseDelete: deleted; both sides must leave the same objects behind.
	phaseDelete phase = "delete/"
)

// key names a case in a phase, as KnownBehaviourDifferences does: the
// case's name, prefixed "update/" or "delete/" in those phases.
func (p phase) key(c *Case) string { return string(p) + c.Name }

func assertBehaviourTableNamesCases(t *testing.T, cases []*Case) {
	t.Helper()
	names := map[string]bool{}
	for _, c := range cases {
		names[c.Name] = true
	}
	for _, d := range KnownBehaviourDifferences {
		name := strings.TrimPrefix(strings.TrimPrefix(d.File, string(phaseDelete)), string(phaseUpdate))
		assert.True(t, names[name], "KnownBehaviourDifferences names %s, which is not in testdata/behaviour", d.File)
		assert.NotEmpty(t, d.Reason, "KnownBehaviourDifferences entry for %s has no reason", d.File)
	}
}

// startSides starts both API servers in parallel, kro's controller on one
// and fleetgraph's hub on the other.
func startSides(t *testing.T) (kro, fg *side) {
	t.Helper()
	bin := kroControllerBinary(t)
	widgets, err := ReadCRD(filepath.Join("testdata", "crds", "widgets.yaml"))
	require.NoError(t, err)
	kroCRDs, err := kroCRDs()
	require.NoError(t, err)

	var wg sync.WaitGroup
	clusters := map[string]*fgtesting.Cluster{}
	errs := map[string]error{}
	var mu sync.Mutex
	for _, name := range []string{"kro", "fleetgraph"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := fgtesting.StartCluster(name, fgtesting.ClusterOptions{})
			mu.Lock()
			defer mu.Unlock()
			clusters[name], errs[name] = c, err
		}()
	}
	wg.Wait()
	for name, c := range clusters {
		require.NoError(t, errs[name])
		t.Cleanup(func() { assert.NoError(t, c.Stop()) })
	}
	ctx := context.Background()
	require.NoError(t, InstallCRDs(ctx, clusters["kro"].Config, append(kroCRDs, widgets)...))
	require.NoError(t, InstallCRDs(ctx, clusters["fleetgraph"].Config, widgets))

	startKroController(t, bin, clusters["kro"])
	h, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
	require.NoError(t, err)
	fgCfg := clusters["fleetgraph"].Config
	fgtesting.Start(t, func(ctx context.Context) error { return h.Run(ctx, fgCfg) })

	return newSide(t, "kro", clusters["kro"]), newSide(t, "fleetgraph", clusters["fleetgraph"])
}

func newSide(t *testing.T, name string, c *fgtesting.Cluster) *side {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	require.NoError(t, err)
	return &side{name: name, dyn: dyn, kube: kube, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// kroControllerBinary is $KRO_CONTROLLER, else what build-kro.sh builds.
func kroControllerBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("KRO_CONTROLLER"); bin != "" {
		return bin
	}
	out, err := exec.Command("./build-kro.sh").Output()
	require.NoError(t, err, "building kro's controller (hack/krodiff/build-kro.sh)")
	return strings.TrimSpace(string(out))
}

// kroCRDs are the CRDs kro's controller needs: RGDs and graph revisions.
func kroCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := KroModuleDir()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "helm", "crds", "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		crd, err := ReadCRD(p)
		if err != nil {
			return nil, err
		}
		out = append(out, crd)
	}
	return out, nil
}

// startKroController runs kro's controller against c until the test ends;
// its log is printed when the test fails.
func startKroController(t *testing.T, bin string, c *fgtesting.Cluster) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, c.Kubeconfig, 0o600))
	logPath := filepath.Join(dir, "kro.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--kubeconfig="+kubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--graceful-shutdown-timeout=5s",
		"--instance-requeue-interval=1s",
		"--rgd-progress-requeue-delay=1s",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			if raw, err := os.ReadFile(logPath); err == nil {
				t.Logf("kro controller log (last 8 KiB):\n%s", tail(raw, 8<<10))
			}
		}
	})
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// apply creates c's namespace, setup objects, RGD and, once its kind is
// served, the instance.
func (s *side) apply(ctx context.Context, c *Case) error {
	ns := "case-" + c.Name
	if _, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, o := range c.Setup {
		if err := s.create(ctx, o, ns); err != nil {
			return fmt.Errorf("setup %s/%s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return s.create(ctx, c.RGD, "")
}

func (s *side) create(ctx context.Context, o *unstructured.Unstructured, ns string) error {
	gvr, namespaced, err := s.resource(o.GroupVersionKind())
	if err != nil {
		return err
	}
	o = o.DeepCopy()
	if namespaced {
		o.SetNamespace(ns)
		_, err = s.dyn.Resource(gvr).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
	} else {
		_, err = s.dyn.Resource(gvr).Create(ctx, o, metav1.CreateOptions{})
	}
	return err
}

// resource maps a kind to its resource, re-reading discovery once when the
// kind is not known yet (a CRD may just have been created).
func (s *side) resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		s.mapper.Reset()
		m, err = s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// deleteInstance deletes c's instance; it is gone once its finalizers are
// released.
func (s *side) deleteInstance(ctx context.Context, c *Case) error {
	err := s.dyn.Resource(c.InstanceResource).Namespace("case-"+c.Name).Delete(ctx, c.Instance.GetName(), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// updateInstance applies c's Update to its instance.
func (s *side) updateInstance(ctx context.Context, c *Case) error {
	_, err := s.dyn.Resource(c.InstanceResource).Namespace("case-"+c.Name).Patch(ctx, c.Instance.GetName(), types.MergePatchType, c.Update, metav1.PatchOptions{})
	return err
}

// createInstance creates c's instance once its CRD is served.
func (s *side) createInstance(ctx context.Context, c *Case) error {
	ns := "case-" + c.Name
	api := s.dyn.Resource(c.InstanceResource).Namespace(ns)
	if _, err := api.Get(ctx, c.Instance.GetName(), metav1.GetOptions{}); err == nil {
		return nil
	}
	o := c.Instance.DeepCopy()
	o.SetNamespace(ns)
	_, err := api.Create(ctx, o, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// compareUntilSettled polls both sides until every case agrees, or shows
// only differences the table covers and has shown the same ones for
// stablePolls polls in a row, or settle passes. It returns each case's last
// differences (none when they agree); an instance whose kind one side never
// serves shows as that side's error.
func compareUntilSettled(t *testing.T, kro, fg *side, cases []*Case, p phase) map[string][]string {
	t.Helper()
	ctx := context.Background()
	diffs := map[string][]string{}
	stable := 0
	// Timing out only means some case still differs: diffs holds how.
	// The poll's own context ends at the deadline: compare with ctx, so
	// that the last comparison is not cut short.
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, settle, true, func(context.Context) (bool, error) {
		changed, covered := false, true
		for _, c := range cases {
			key := p.key(c)
			d := compareOnce(ctx, kro, fg, c, p)
			changed = changed || !slices.Equal(d, diffs[key])
			diffs[key] = d
			known, _ := lookup(KnownBehaviourDifferences, key)
			covered = covered && len(known.uncovered(d)) == 0
		}
		if changed || !covered {
			stable = 0
			return false, nil
		}
		stable++
		return stable >= stablePolls, nil
	})
	return diffs
}

func compareOnce(ctx context.Context, kro, fg *side, c *Case, p phase) []string {
	snaps := map[string]Snapshot{}
	var errs []string
	for _, s := range []*side{kro, fg} {
		if p == phaseApply {
			if err := s.createInstance(ctx, c); err != nil {
				errs = append(errs, fmt.Sprintf("error: %s: creating the instance: %v", s.name, err))
				continue
			}
		}
		snap, err := TakeSnapshot(ctx, s.dyn, c, "case-"+c.Name, s.resource)
		if err != nil {
			errs = append(errs, fmt.Sprintf("error: %s: %v", s.name, err))
			continue
		}
		if snap.Exists && !snap.Current {
			errs = append(errs, fmt.Sprintf("pending: %s has not reported on the instance's current generation", s.name))
			continue
		}
		snaps[s.name] = snap
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return errs
	}
	return SnapshotDiff(snaps["kro"], snaps["fleetgraph"])
}
