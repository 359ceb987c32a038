//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/internal/spoke"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// orphanRGD: second reads first, so second is deleted first.
const orphanRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: orphan
spec:
  schema:
    apiVersion: v1alpha1
    kind: Orphan
    spec:
      value: string | default="a"
  resources:
  - id: first
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-first
      data:
        value: ${schema.spec.value}
  - id: second
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-second
      data:
        from: ${first.data.value}
`

// orphanGrace is the grace the tests give orphans: short, but longer than
// a reconcile, so that a collector that ignored it would be caught.
const orphanGrace = 2 * time.Second

// logLines keeps the lines a logger wrote, for tests whose only signal
// that the runtime looked at something and left it is its log.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
}

// mention waits for a line that contains every part.
func (l *logLines) mention(t *testing.T, parts ...string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		l.mu.Lock()
		defer l.mu.Unlock()
	lines:
		for _, line := range l.lines {
			for _, p := range parts {
				if !strings.Contains(line, p) {
					continue lines
				}
			}
			return true, ""
		}
		return false, fmt.Sprintf("no log line with %q among %d", parts, len(l.lines))
	})
}

func TestOrphansAreCollected(t *testing.T) {
	t.Parallel()
	fleet := sharedFleet(t)
	ctx := context.Background()
	g := compile(t, orphanRGD)
	s := fleet.Spokes()[0]
	spokeCfg := s.Config
	c := newClient(t, spokeCfg)
	installCRD(t, c, g)
	logs := &logLines{}
	opts := spoke.Config{Options: instance.Options{OrphanGrace: orphanGrace, Logger: logs.logger()}}
	const restart, live, released, lonelyNS = "orphans-restart", "orphans-live", "orphans-released", "orphans-lonely"
	var cluster string
	newRuntime := func() (*spoke.Runtime, func()) {
		provider, names := providerFor(t, "orphans", []*fgtesting.Cluster{s}, cacheopts.TrimCache)
		cluster = string(names[0])
		rt, stop := runRuntime(t, fleet, provider, opts)
		t.Cleanup(stop)
		require.NoError(t, rt.Serve(spoke.Version{Graph: g}))
		return rt, stop
	}
	rt, stop := newRuntime()

	// While no process serves the graph, an instance loses its finalizer
	// and goes; one of its children is replaced by somebody's own object,
	// and somebody else writes an object labelled as its child. The next
	// process collects what is left of it, and only that.
	t.Run("children of an instance deleted while the hub was down", func(t *testing.T) {
		createNamespace(t, c, restart)
		for _, name := range []string{"kept", "gone"} {
			require.NoError(t, c.Create(ctx, newInstance(g, restart, name, map[string]any{})))
		}
		stateIs(t, c, g, restart, "kept", contract.StateActive)
		stateIs(t, c, g, restart, "gone", contract.StateActive)
		kept := uidsOf(t, c, restart, "kept-first", "kept-second")
		goneInst, err := getInstance(t, c, g, restart, "gone")
		require.NoError(t, err)
		stop()

		unstick(t, c, g, restart, "gone")
		require.NoError(t, c.Delete(ctx, configMapRef(restart, "gone-second")))
		foreign := createUserConfigMap(t, c, restart, "gone-second")
		impostor := configMapRef(restart, "gone-impostor")
		impostor.SetLabels(map[string]string{
			contract.LabelManagedBy: contract.ManagedBy, contract.LabelGraph: g.Name, contract.LabelNodeID: "second",
			contract.LabelInstanceUID: string(goneInst.GetUID()), contract.LabelInstanceName: "gone",
			contract.LabelInstanceNamespace: restart,
		})
		require.NoError(t, c.Create(ctx, impostor, client.FieldOwner("someone-else")))

		rt, stop = newRuntime()
		// The impostor is in the first deletion wave, gone-first in the
		// second: once gone-first is gone, the impostor was looked at.
		gone(t, c, restart, "gone-first")
		untouched(t, c, foreign)
		untouched(t, c, impostor)
		logs.mention(t, "left alone", restart+"/gone-impostor", `not written by field manager \"fleetgraph\"`)
		assert.Equal(t, kept, uidsOf(t, c, restart, "kept-first", "kept-second"), "children of a live instance are kept")
		collected, _ := watchSeries(t, "fleetgraph_spoke_orphans_collected_total", cluster, "ConfigMap")
		assert.Equal(t, 1.0, collected)
		orphanEvent(t, c, restart, "gone", string(goneInst.GetUID()), "ConfigMap "+restart+"/gone-first")
	})

	// An instance stuck deleting (its first child is held by somebody's
	// finalizer) is unstuck by hand, and created again under its name. Its
	// other child goes only after the held one: the graph's deletion
	// order. The new instance then gets children of its own.
	t.Run("children of an instance whose finalizer was removed by hand", func(t *testing.T) {
		createNamespace(t, c, live)
		require.NoError(t, c.Create(ctx, newInstance(g, live, "stuck", map[string]any{})))
		stateIs(t, c, g, live, "stuck", contract.StateActive)
		deletions := recordDeletions(t, spokeCfg, live)
		patchConfigMap(t, c, live, "stuck-second", `{"metadata":{"finalizers":["test.fleetgraph.dev/hold"]}}`)
		require.NoError(t, c.Delete(ctx, newInstance(g, live, "stuck", nil)))
		eventually(t, func() (bool, string) {
			cm, err := configMap(c, live, "stuck-second")
			return err == nil && cm.GetDeletionTimestamp() != nil, fmt.Sprintf("stuck-second not being deleted (%v)", err)
		})
		unstick(t, c, g, live, "stuck")
		require.NoError(t, c.Create(ctx, newInstance(g, live, "stuck", map[string]any{"value": "b"})))

		require.Never(t, func() bool {
			_, err := configMap(c, live, "stuck-first")
			return apierrors.IsNotFound(err)
		}, 2*orphanGrace, 100*time.Millisecond, "stuck-first went before stuck-second, which reads it")
		patchConfigMap(t, c, live, "stuck-second", `{"metadata":{"finalizers":null}}`)

		stateIs(t, c, g, live, "stuck", contract.StateActive)
		configMapData(t, c, live, "stuck-second", "from", "b")
		inst, err := getInstance(t, c, g, live, "stuck")
		require.NoError(t, err)
		for _, name := range []string{"stuck-first", "stuck-second"} {
			cm, err := configMap(c, live, name)
			require.NoError(t, err)
			assert.Equal(t, string(inst.GetUID()), cm.GetLabels()[contract.LabelInstanceUID], name)
		}
		assert.Equal(t, []string{"stuck-second", "stuck-first"}, deletions())
	})

	// A graph removed with its instances orphaned releases them: their
	// children stay, also once the instances are gone and the graph is
	// served again.
	t.Run("children of a released instance", func(t *testing.T) {
		createNamespace(t, c, released)
		require.NoError(t, c.Create(ctx, newInstance(g, released, "freed", map[string]any{})))
		stateIs(t, c, g, released, "freed", contract.StateActive)
		children := uidsOf(t, c, released, "freed-first", "freed-second")
		require.NoError(t, rt.Serve(spoke.Version{Graph: g, Removal: spoke.RemovalRelease}))
		eventually(t, func() (bool, string) {
			inst, err := getInstance(t, c, g, released, "freed")
			if err != nil {
				return false, err.Error()
			}
			return len(inst.GetFinalizers()) == 0, fmt.Sprintf("finalizers %v", inst.GetFinalizers())
		})
		deleteInstance(t, c, g, released, "freed")
		require.NoError(t, rt.Serve(spoke.Version{Graph: g}))

		logs.mention(t, "left alone", released+"/freed-first", "when its instance was released")
		logs.mention(t, "left alone", released+"/freed-second", "when its instance was released")
		assert.Equal(t, children, uidsOf(t, c, released, "freed-first", "freed-second"))
	})

	// No instance of a graph is left on the cluster when the hub comes
	// back, so no reconcile would ever start a watch of its child kinds:
	// the children of its last instance are found all the same.
	t.Run("children of the last instance, deleted while the hub was down", func(t *testing.T) {
		lonely := compile(t, strings.NewReplacer("name: orphan", "name: lonely", "kind: Orphan", "kind: Lonely").Replace(orphanRGD))
		installCRD(t, c, lonely)
		createNamespace(t, c, lonelyNS)
		require.NoError(t, rt.Serve(spoke.Version{Graph: lonely}))
		require.NoError(t, c.Create(ctx, newInstance(lonely, lonelyNS, "last", map[string]any{})))
		stateIs(t, c, lonely, lonelyNS, "last", contract.StateActive)
		stop()

		unstick(t, c, lonely, lonelyNS, "last")
		rt, _ = newRuntime()
		require.NoError(t, rt.Serve(spoke.Version{Graph: lonely}))
		gone(t, c, lonelyNS, "last-second")
		gone(t, c, lonelyNS, "last-first")
	})
}

// unstick removes every finalizer of an instance, as a person does to
// get rid of one that is stuck, deletes it and waits until it is gone.
func unstick(t *testing.T, c client.Client, g *graph.Graph, ns, name string) {
	t.Helper()
	inst := newInstance(g, ns, name, nil)
	require.NoError(t, c.Patch(context.Background(), inst, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))
	require.NoError(t, client.IgnoreNotFound(c.Delete(context.Background(), inst)))
	eventually(t, func() (bool, string) {
		_, err := getInstance(t, c, g, ns, name)
		return apierrors.IsNotFound(err), fmt.Sprintf("instance %s/%s still there (%v)", ns, name, err)
	})
}

func patchConfigMap(t *testing.T, c client.Client, ns, name, patch string) {
	t.Helper()
	require.NoError(t, c.Patch(context.Background(), configMapRef(ns, name), client.RawPatch(types.MergePatchType, []byte(patch))))
}

// uidsOf returns the UIDs of the named ConfigMaps, which must exist.
func uidsOf(t *testing.T, c client.Client, ns string, names ...string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, name := range names {
		cm, err := configMap(c, ns, name)
		require.NoError(t, err)
		out[name] = cm.GetUID()
	}
	return out
}

// orphanEvent waits for the event on a gone instance that names a child
// deleted because the instance is gone.
func orphanEvent(t *testing.T, c client.Client, ns, instance, ownerUID, child string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == instance && string(e.Regarding.UID) == ownerUID && e.Reason == "OrphansDeleted" {
				if strings.Contains(e.Note, child) {
					return true, ""
				}
				seen = append(seen, e.Note)
			}
		}
		return false, fmt.Sprintf("no OrphansDeleted event on %s naming %s: %q", instance, child, seen)
	})
}
