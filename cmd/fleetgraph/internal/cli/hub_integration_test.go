//go:build integration

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli"
	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/status"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	wait = 90 * time.Second
	tick = 100 * time.Millisecond
)

// One fleet for the package: a hub cluster and two spokes, served by one
// hub that keeps a replica status record (as every replica of a sharded
// hub does), so status has a row per cluster.
var (
	fleet     *fgtesting.Fleet
	hubConfig string // a kubeconfig file of the hub cluster
)

func TestMain(m *testing.M) {
	flag.Parse()
	log.SetLogger(logr.Discard())
	code, err := runWithHub(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func runWithHub(m *testing.M) (int, error) {
	f, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 2})
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Stop() }()
	fleet = f
	dir, err := os.MkdirTemp("", "fleetgraph-cli-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	hubConfig = filepath.Join(dir, "hub.kubeconfig")
	if err := os.WriteFile(hubConfig, f.Hub.Kubeconfig, 0o600); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	provider, err := f.NewProvider(ctx)
	if err != nil {
		return 0, err
	}
	h, err := sdk.NewHub(provider, sdk.Options{
		RGDs:     sdk.RGDOptions{InstallCRD: true},
		Fleet:    sdk.FleetOptions{Probe: sdk.ProberOptions{Interval: time.Second, Timeout: time.Second}},
		Replicas: sdk.ReplicaOptions{ID: "hub-0"},
	})
	if err != nil {
		return 0, err
	}
	mgr, err := mcmanager.New(f.Hub.Config, provider, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		return 0, err
	}
	if err := h.SetupWithManager(mgr); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	return code, <-done
}

// hub runs the command against the test hub.
func hub(t *testing.T, args ...string) result {
	t.Helper()
	return fleetgraph(t, append([]string{"--kubeconfig", hubConfig}, args...)...)
}

func hubClient(t require.TestingT) client.Client {
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return c
}

// readFleet is status -o json, decoded.
func readFleet(t require.TestingT, args ...string) *status.Fleet {
	var out bytes.Buffer
	code := cli.Main(context.Background(), "fleetgraph", append([]string{"--kubeconfig", hubConfig, "status", "-o", "json"}, args...), cli.Streams{Out: &out, ErrOut: io.Discard})
	require.Equal(t, cli.ExitOK, code)
	f := &status.Fleet{}
	require.NoError(t, json.Unmarshal(out.Bytes(), f))
	return f
}

// times matches the timestamps rollout status prints.
var times = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// withoutTimes is out with every timestamp replaced, for a golden file.
func withoutTimes(out string) string { return times.ReplaceAllString(out, "<time>") }

// val is what a published number says: -1 when it is absent, so that an
// assertion tells absent from zero.
func val(n *int64) int64 {
	if n == nil {
		return -1
	}
	return *n
}

func clusterOf(f *status.Fleet, graph, cluster string) status.Cluster {
	for _, g := range f.Graphs {
		if g.Name != graph {
			continue
		}
		for _, c := range g.Clusters {
			if c.Name == cluster {
				return c
			}
		}
	}
	return status.Cluster{}
}

// Every command against a real hub, in the order a person would use
// them: a sample instance of the quickstart graph, the fleet's status,
// status --watch while a spoke stops answering, and a rollout steered from
// the command line.
func TestCommandsAgainstAHub(t *testing.T) {
	ctx := context.Background()
	rgds, err := v1alpha1.LoadFile(webapp)
	require.NoError(t, err)
	hc := hubClient(t)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, client.IgnoreAlreadyExists(hubClient(ct).Create(ctx, rgds[0].DeepCopy())))
	}, wait, tick, "applying the webapp RGD (the hub installs its CRD)")

	t.Run("generate instance applies cleanly to a spoke and becomes ACTIVE", func(t *testing.T) {
		r := fleetgraph(t, "generate", "instance", webapp, "-n", "default", "--instance-name", "from-cli")
		require.Equal(t, cli.ExitOK, r.code, r.String())
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(r.out), &obj.Object))
		spoke, err := client.New(fleet.Spoke("spoke-1").Config, client.Options{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NoError(ct, spoke.Patch(ctx, obj.DeepCopy(), client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership))
		}, wait, tick, "applying the generated instance, once the spoke serves its kind")
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			got := obj.DeepCopy()
			require.NoError(ct, spoke.Get(ctx, client.ObjectKeyFromObject(obj), got))
			state, _, _ := unstructured.NestedString(got.Object, "status", "state")
			assert.Equal(ct, "ACTIVE", state)
		}, wait, tick)
	})

	t.Run("status shows every cluster of every graph", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			f := readFleet(ct)
			one, two := clusterOf(f, "webapp", "spoke-1"), clusterOf(f, "webapp", "spoke-2")
			assert.Equal(ct, [4]any{"Established", int64(1), int64(1), int64(1)}, [4]any{one.CRD, val(one.ServedRevision), val(one.Instances), val(one.ReadyInstances)})
			assert.Equal(ct, [4]any{"Established", int64(1), int64(0), int64(0)}, [4]any{two.CRD, val(two.ServedRevision), val(two.Instances), val(two.ReadyInstances)})
			assert.Equal(ct, "True", f.Graphs[0].Ready)
			assert.Equal(ct, int64(1), f.Graphs[0].ReadyInstances)
		}, wait, tick, "the hub publishes both spokes serving revision 1")
		eventuallyGolden(t, "status-matrix", wait, func() string { return hub(t, "status", "--color", "never").String() })
		eventuallyGolden(t, "status-webapp", wait, func() string { return hub(t, "status", "webapp").String() })
		wide := hub(t, "status", "webapp", "-o", "wide")
		assert.Regexp(t, `(?m)^spoke-1\s+Established\s+1\s+1\s+1\s+1\s+0\s+-\s+-\s+yes\s+\d+[smhd]\s+record`, wide.out)

		r := hub(t, "status", "nosuch")
		assert.Equal(t, cli.ExitFailed, r.code)
		assert.Contains(t, r.err, "no such ResourceGraphDefinition on the hub: nosuch")
	})

	t.Run("status draws the fleet matrix as dot and svg", func(t *testing.T) {
		statusPictures(t) // status_matrix_integration_test.go
	})

	t.Run("status --watch in a terminal follows a spoke paused and resumed", func(t *testing.T) {
		watchInATerminal(t)
	})

	t.Run("status --watch elsewhere prints a frame only when the view changes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		r := runContext(t, ctx, "fleetgraph", "", "--kubeconfig", hubConfig, "status", "webapp", "--watch", "--interval", "100ms")
		assert.Equal(t, cli.ExitOK, r.code, r.String())
		assert.Equal(t, 1, strings.Count(r.out, "CLUSTER"), "one frame for an unchanged view:\n%s", r.out)
		assert.NotContains(t, r.out, "\x1b[", "no terminal, no escape codes")
	})

	t.Run("rollout status, pause, resume, approve and rollback", func(t *testing.T) {
		steerRollout(t, hc)
	})

	t.Run("rollout hold and release", func(t *testing.T) {
		holdAndRelease(t) // rollout_hold_integration_test.go
	})
}

// ansi matches the escape codes of colours and of clearing the screen.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// screen collects what the command wrote to its terminal.
type screen struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *screen) raw() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// frames splits the terminal's output at each redraw, escape codes
// removed.
func (s *screen) frames() []string {
	parts := strings.Split(s.raw(), "\x1b[H\x1b[2J")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(ansi.ReplaceAllString(p, ""), "\r", "")
	}
	return parts
}

// rowMatches reports whether a frame after the from-th has a spoke-2 row
// that matches re, and returns the index of the first such frame.
func (s *screen) rowMatches(re *regexp.Regexp, from int) (int, bool) {
	frames := s.frames()
	for i := from; i < len(frames); i++ {
		if re.MatchString(frames[i]) {
			return i, true
		}
	}
	return 0, false
}

func watchInATerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	reader, term, err := openPTY()
	require.NoError(t, err)
	defer reader.Close()
	scr := &screen{}
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(scr, reader); close(copied) }()

	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- cli.Main(ctx, "fleetgraph", []string{"--kubeconfig", hubConfig, "status", "webapp", "--watch", "--interval", "200ms"},
			cli.Streams{In: strings.NewReader(""), Out: term, ErrOut: term})
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			assert.Equal(t, cli.ExitOK, <-exit)
			term.Close()
		}
	}
	defer stop()

	up := regexp.MustCompile(`(?m)^spoke-2\s+Established\s+1\s+1\s+0\s+0\s+0\s+-`)
	down := regexp.MustCompile(`(?m)^spoke-2\s+Unreachable\s.*\sUnreachable\s`)
	var at int
	require.Eventually(t, func() bool { var ok bool; at, ok = scr.rowMatches(up, 0); return ok }, wait, tick, "spoke-2 served, on screen:\n%s", lastFrame(scr))

	spoke := fleet.Spoke("spoke-2")
	require.NoError(t, spoke.Pause())
	resumed := false
	defer func() {
		if !resumed {
			_ = spoke.Resume()
		}
	}()
	require.Eventually(t, func() bool { var ok bool; at, ok = scr.rowMatches(down, at); return ok }, wait, tick, "spoke-2 unreachable, on screen:\n%s", lastFrame(scr))
	require.NoError(t, spoke.Resume())
	resumed = true
	require.Eventually(t, func() bool { _, ok := scr.rowMatches(up, at+1); return ok }, wait, tick, "spoke-2 served again, on screen:\n%s", lastFrame(scr))

	stop()
	<-copied
	raw := scr.raw()
	assert.Contains(t, raw, "\x1b[H\x1b[2J", "each frame replaces the last in place")
	assert.Contains(t, raw, "\x1b[31mUnreachable", "a terminal gets colours: red for Unreachable")
	assert.Contains(t, raw, "\x1b[32mEstablished", "and green for Established")
	assert.Contains(t, raw, "Every 200ms, last read ")
}

func lastFrame(s *screen) string {
	f := s.frames()
	return f[len(f)-1]
}

// applyRollout server-side applies a GraphRollout, with a new client each
// attempt: a client's REST mapper does not see a kind installed after it.
func applyRollout(t *testing.T, spec map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName("webapp")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c, err := client.New(fleet.Hub.Config, client.Options{})
		require.NoError(ct, err)
		assert.NoError(ct, c.Patch(context.Background(), u.DeepCopy(), client.Apply, client.FieldOwner("test"), client.ForceOwnership))
	}, wait, tick, "applying the GraphRollout (the hub installs its CRD)")
}

func readRollout(t require.TestingT) *fgv1alpha1.GraphRollout {
	c, err := client.New(fleet.Hub.Config, client.Options{})
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "webapp"}, u))
	ro := &fgv1alpha1.GraphRollout{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ro))
	return ro
}

// requireApproval waits until the hub records the approval the CLI's
// annotation gave, and removes the annotation.
func requireApproval(t *testing.T, want fgv1alpha1.RolloutApproval) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ro := readRollout(ct)
		assert.Empty(ct, ro.Annotations[cli.AnnotationApprove], "consumed")
		var got []fgv1alpha1.RolloutApproval
		for _, a := range ro.Status.Approvals {
			got = append(got, fgv1alpha1.RolloutApproval{Revision: a.Revision, Wave: a.Wave})
		}
		assert.Contains(ct, got, want)
	}, wait, tick, "the hub records %+v", want)
}

func steerRollout(t *testing.T, hc client.Client) {
	ctx := context.Background()
	applyRollout(t, map[string]any{
		"graph":  "webapp",
		"waves":  []any{map[string]any{"name": "canary", "clusters": int64(1), "approval": "Required"}, map[string]any{"name": "rest", "percent": int64(100)}},
		"health": map[string]any{"soakSeconds": int64(3600)},
	})
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := readRollout(ct).Status
		assert.Equal(ct, [2]any{fgv1alpha1.RolloutComplete, int64(1)}, [2]any{st.Phase, st.TargetRevision})
	}, wait, tick, "the rollout takes revision 1 as rolled out")

	r := hub(t, "rollout", "pause", "webapp")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp paused\n", r.out, r.String())
	assert.True(t, readRollout(t).Spec.Paused)

	// Revision 2: a new default image.
	patch := []byte(`{"spec":{"schema":{"spec":{"image":"string | default=\"nginx:1.27\""}}}}`)
	require.NoError(t, hc.Patch(ctx, &v1alpha1.ResourceGraphDefinition{ObjectMeta: metav1Name("webapp")}, client.RawPatch(types.MergePatchType, patch)))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st := readRollout(ct).Status
		assert.Equal(ct, [3]any{fgv1alpha1.RolloutPaused, int64(2), int64(1)}, [3]any{st.Phase, st.TargetRevision, st.StableRevision})
	}, wait, tick, "revision 2 waits, paused")
	r = hub(t, "rollout", "status", "webapp")
	assert.Equal(t, cli.ExitOK, r.code, r.String())
	assert.Contains(t, r.out, "GraphRollout webapp (graph webapp): Paused\n  target revision 2, stable revision 1, wave \"canary\" (1 of 2)\n")
	assert.Contains(t, r.out, "\n  paused (spec.paused)\n")
	assert.Regexp(t, `(?m)^canary\s+paused\s+1\s+[01]\s+-\s+-$`, r.out)

	r = hub(t, "rollout", "resume", "webapp")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp resumed\n", r.out, r.String())
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ro := readRollout(ct)
		assert.False(ct, ro.Spec.Paused)
		assert.Equal(ct, fgv1alpha1.RolloutProgressing, ro.Status.Phase)
		assert.Empty(ct, ro.Annotations[fgv1alpha1.AnnotationResume], "a rollout that did not fail gets no resume annotation")
		assert.Equal(ct, "canary", ro.Status.AwaitingApproval)
	}, wait, tick, "resumed, the canary wave awaits approval")

	approveOnAHub(t)

	r = hub(t, "rollout", "rollback", "webapp", "--to-revision", "7")
	assert.Equal(t, cli.ExitFailed, r.code)
	assert.Contains(t, r.err, "graph webapp has no revision 7 (no GraphRevision webapp-r00007)")
	r = hub(t, "rollout", "rollback", "webapp")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp rolled back to revision 1\n", r.out, r.String())
	assert.Equal(t, int64(1), readRollout(t).Spec.RollbackTo)

	r = hub(t, "rollout", "status", "webapp", "--watch", "--interval", "200ms", "--timeout", "90s")
	assert.Equal(t, cli.ExitOK, r.code, "--watch ends with the rollback: %s", r)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		f := readFleet(ct, "webapp")
		for _, name := range []string{"spoke-1", "spoke-2"} {
			c := clusterOf(f, "webapp", name)
			assert.Equal(ct, [3]any{"Established", int64(1), int64(1)}, [3]any{c.CRD, val(c.ServedRevision), val(c.DesiredRevision)}, name)
		}
		ro := readRollout(ct)
		assert.Empty(ct, ro.Status.HoldingBack)
		for _, c := range ro.Status.Clusters {
			assert.Equal(ct, int64(1), c.Revision, "the rollout's view of %s", c.Name)
		}
	}, wait, tick, "both spokes serve revision 1 again")
	eventuallyGolden(t, "rollout-status-rolled-back", wait, func() string { return withoutTimes(hub(t, "rollout", "status", "webapp").String()) })
	eventuallyGolden(t, "status-webapp-rolled-back", wait, func() string { return hub(t, "status", "webapp").String() })

	r = hub(t, "rollout", "rollback", "webapp", "--clear")
	assert.Equal(t, "graphrollout.fleetgraph.dev/webapp rollback cleared\n", r.out, r.String())
	assert.Zero(t, readRollout(t).Spec.RollbackTo)

	r = hub(t, "rollout", "pause", "nosuch")
	assert.Equal(t, cli.ExitFailed, r.code)
	assert.Contains(t, r.err, `no GraphRollout is named "nosuch" or rolls out a graph of that name`)
}

func metav1Name(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
