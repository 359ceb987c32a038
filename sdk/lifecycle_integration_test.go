//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// deleteBound is how long deleting an instance may take: its children are
// deleted wave by wave, or nothing holds it at all.
const deleteBound = 30 * time.Second

// noteRGD is a one-node graph named name serving kind (group
// lifecycle.fleetgraph.dev): each instance gets a ConfigMap
// <instance>-<name> whose data.note is spec.note.
func noteRGD(t testing.TB, name, kind string) *v1alpha1.ResourceGraphDefinition {
	return rgdFromString(t, fmt.Sprintf(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: %s
spec:
  schema:
    apiVersion: v1alpha1
    group: lifecycle.fleetgraph.dev
    kind: %s
    spec:
      note: string | default="hello"
  resources:
  - id: note
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-%s
      data:
        note: ${schema.spec.note}
`, name, kind, name))
}

func noteGVK(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "lifecycle.fleetgraph.dev", Version: "v1alpha1", Kind: kind}
}

// childNote reads the note ConfigMap of instance inst of graph name.
func childNote(c client.Client, inst, name string) (string, error) {
	data, err := configMapData(c, inst+"-"+name)
	return data["note"], err
}

// requireRepaired overwrites the instance's child and waits for the graph
// to put it back: proof that the graph is still being served.
func requireRepaired(t *testing.T, c client.Client, inst, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: inst + "-" + name}, cm))
	cm.Data["note"] = "drifted"
	require.NoError(t, c.Update(context.Background(), cm))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		note, err := childNote(c, inst, name)
		require.NoError(ct, err)
		assert.Equal(ct, "hello", note)
	}, wait, tick, "graph %s repairs the drift of %s's child", name, inst)
}

func policies(t require.TestingT, c client.Client, graphName string) []string {
	list := &admissionv1.MutatingAdmissionPolicyList{}
	require.NoError(t, c.List(context.Background(), list, client.MatchingLabels{contract.LabelGraph: graphName}))
	var out []string
	for _, p := range list.Items {
		if !strings.HasPrefix(p.Name, "fleetgraph-probe.") { // the readiness probe's, short-lived
			out = append(out, p.Name)
		}
	}
	return out
}

// requireGraphAccepted waits until the RGD's GraphAccepted condition has
// status and reason, and returns it.
func requireGraphAccepted(t *testing.T, c client.Client, name string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got = rgdCondition(c, name, v1alpha1.ConditionGraphAccepted)
		require.NotNil(ct, got)
		assert.Equal(ct, status, got.Status)
		assert.Equal(ct, reason, got.Reason)
	}, wait, tick, "GraphAccepted of RGD %s", name)
	return got
}

func rgdGone(c client.Client, name string) bool {
	err := c.Get(context.Background(), client.ObjectKey{Name: name}, &v1alpha1.ResourceGraphDefinition{})
	return client.IgnoreNotFound(err) == nil && err != nil
}

// requireDeleted deletes obj and waits, within deleteBound, until it is gone.
func requireDeleted(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	require.NoError(t, client.IgnoreNotFound(c.Delete(context.Background(), obj.DeepCopy())))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(obj.GroupVersionKind())
		err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), u)
		assert.True(ct, err != nil && client.IgnoreNotFound(err) == nil, "%s %s still there (finalizers %v)", obj.GetKind(), obj.GetName(), u.GetFinalizers())
	}, deleteBound, tick)
}

// Graphs from Go and from RGD objects coexist: the RGD controller never
// removes a Go graph, and a name or a kind is held by one graph only.
func TestGraphSourcesCoexist(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1) // its own: the RGD controller claims every RGD on its hub cluster
	ctx := context.Background()
	hubClient := newClient(t, fleet.Hub.Config)
	spokeClient := newClient(t, fleet.Spoke("spoke-1").Config)
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})

	require.NoError(t, h.RegisterGraph(ctx, noteRGD(t, "from-go", "GoNote")))
	createWhenServed(t, spokeClient, instance(noteGVK("GoNote"), "a", map[string]any{}))
	requireState(t, spokeClient, noteGVK("GoNote"), "a", "ACTIVE")

	t.Run("kro's legacy value suspends, in any case", func(t *testing.T) {
		paused := instance(noteGVK("GoNote"), "paused", map[string]any{})
		paused.SetAnnotations(map[string]string{contract.AnnotationKroReconcile: "Disabled"})
		require.NoError(t, spokeClient.Create(ctx, paused))
		createWhenServed(t, spokeClient, instance(noteGVK("GoNote"), "probe", map[string]any{}))
		requireState(t, spokeClient, noteGVK("GoNote"), "probe", "ACTIVE")
		_, err := childNote(spokeClient, "paused", "from-go")
		assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "a suspended instance gets no children")

		patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, contract.AnnotationKroReconcile))
		require.NoError(t, spokeClient.Patch(ctx, paused, client.RawPatch("application/merge-patch+json", patch)))
		requireState(t, spokeClient, noteGVK("GoNote"), "paused", "ACTIVE")
	})

	t.Run("a Go graph keeps serving while RGDs of other names come and go", func(t *testing.T) {
		start := time.Now()
		for i := 0; time.Since(start) < 30*time.Second; i++ {
			name := fmt.Sprintf("churn-%d", i)
			require.NoError(t, hubClient.Create(ctx, noteRGD(t, name, fmt.Sprintf("Churn%d", i))))
			requireGraphAccepted(t, hubClient, name, metav1.ConditionTrue, "Valid")
			require.NoError(t, hubClient.Delete(ctx, noteRGD(t, name, "")))
			require.Eventually(t, func() bool { return rgdGone(hubClient, name) }, wait, tick)
		}
		assert.Contains(t, h.Graphs(), "from-go")
		requireRepaired(t, spokeClient, "a", "from-go")
	})

	t.Run("a name is refused from the other source", func(t *testing.T) {
		require.NoError(t, hubClient.Create(ctx, noteRGD(t, "from-go", "OtherNote")))
		c := requireGraphAccepted(t, hubClient, "from-go", metav1.ConditionFalse, "NameTaken")
		assert.Contains(t, c.Message, "Go")

		require.NoError(t, hubClient.Create(ctx, noteRGD(t, "from-rgd", "RGDNote")))
		requireGraphAccepted(t, hubClient, "from-rgd", metav1.ConditionTrue, "Valid")
		err := h.RegisterGraph(ctx, noteRGD(t, "from-rgd", "RGDNote"))
		assert.ErrorIs(t, err, sdk.ErrNameTaken)
		assert.ErrorIs(t, h.UnregisterGraph(ctx, "from-rgd"), sdk.ErrNameTaken)

		require.NoError(t, hubClient.Delete(ctx, noteRGD(t, "from-go", "")))
		require.Eventually(t, func() bool { return rgdGone(hubClient, "from-go") }, wait, tick,
			"a refused RGD is released at once")
		requireRepaired(t, spokeClient, "a", "from-go")
	})

	t.Run("a second graph for a served kind is refused and the first keeps serving", func(t *testing.T) {
		require.NoError(t, hubClient.Create(ctx, noteRGD(t, "rgd-twin", "RGDNote")))
		c := requireGraphAccepted(t, hubClient, "rgd-twin", metav1.ConditionFalse, "KindTaken")
		assert.Contains(t, c.Message, `"from-rgd"`)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			ready := rgdCondition(hubClient, "rgd-twin", v1alpha1.ConditionReady)
			require.NotNil(ct, ready)
			assert.Equal(ct, metav1.ConditionFalse, ready.Status)
		}, wait, tick)
		err := h.RegisterGraph(ctx, noteRGD(t, "go-twin", "GoNote"))
		assert.ErrorIs(t, err, sdk.ErrKindTaken)
		assert.Contains(t, err.Error(), `"from-go"`)

		createWhenServed(t, spokeClient, instance(noteGVK("RGDNote"), "b", map[string]any{}))
		requireState(t, spokeClient, noteGVK("RGDNote"), "b", "ACTIVE")
		requireRepaired(t, spokeClient, "b", "from-rgd")
		requireRepaired(t, spokeClient, "a", "from-go")
		_, err = childNote(spokeClient, "b", "rgd-twin")
		assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "the refused graph made no children")
	})
}

// removalCase is one way of removing a graph.
type removalCase struct {
	name   string
	orphan bool
	// register serves the graph; remove starts its removal.
	register, remove func(t *testing.T, rgd *v1alpha1.ResourceGraphDefinition)
}

// Removing a graph, by UnregisterGraph or by deleting its RGD, takes the
// admission policy off every spoke and never leaves an instance that
// cannot be deleted: by default the instances it finalizes keep being
// finalized (children deleted), with the orphan option they are released.
func TestRemovalStrandsNoOne(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 2) // its own: the RGD controller claims every RGD on its hub cluster
	ctx := context.Background()
	hubClient := newClient(t, fleet.Hub.Config)
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
	provider2, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	orphaning := startHub(t, fleet.Hub.Config, provider2, sdk.Options{RGDs: sdk.RGDOptions{DisableController: true, OrphanInstances: true}})

	fromGo := func(h *sdk.Hub) func(t *testing.T, rgd *v1alpha1.ResourceGraphDefinition) {
		return func(t *testing.T, rgd *v1alpha1.ResourceGraphDefinition) {
			require.NoError(t, h.RegisterGraph(ctx, rgd))
		}
	}
	unregister := func(h *sdk.Hub) func(t *testing.T, rgd *v1alpha1.ResourceGraphDefinition) {
		return func(t *testing.T, rgd *v1alpha1.ResourceGraphDefinition) {
			require.NoError(t, h.UnregisterGraph(ctx, rgd.Name))
		}
	}
	create := func(t *testing.T, rgd *v1alpha1.ResourceGraphDefinition) {
		require.NoError(t, hubClient.Create(ctx, rgd))
	}
	deleteRGD := func(t *testing.T, rgd *v1alpha1.ResourceGraphDefinition) {
		require.NoError(t, hubClient.Delete(ctx, rgd))
	}
	cases := []removalCase{
		{name: "unregister", register: fromGo(h), remove: unregister(h)},
		{name: "unregister-orphan", orphan: true, register: fromGo(orphaning), remove: unregister(orphaning)},
		{name: "rgd-delete", register: create, remove: deleteRGD},
		{name: "rgd-delete-orphan", orphan: true, register: create, remove: deleteRGD},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind := fmt.Sprintf("Removed%d", i)
			rgd := noteRGD(t, tc.name, kind)
			if tc.orphan {
				rgd.Annotations = map[string]string{v1alpha1.AnnotationOrphanInstances: "true"}
			}
			runRemoval(t, fleet, hubClient, tc, rgd, noteGVK(kind))
		})
	}
}

func runRemoval(t *testing.T, fleet *fgtesting.Fleet, hubClient client.Client, tc removalCase, rgd *v1alpha1.ResourceGraphDefinition, gvk schema.GroupVersionKind) {
	ctx := context.Background()
	spokes := map[string]client.Client{}
	for _, s := range fleet.Spokes() {
		spokes[s.Name] = newClient(t, s.Config)
	}
	tc.register(t, rgd.DeepCopy())
	for _, c := range spokes {
		createWhenServed(t, c, instance(gvk, "before", map[string]any{}))
		createWhenServed(t, c, instance(gvk, "held", map[string]any{}))
		requireState(t, c, gvk, "before", "ACTIVE")
		requireState(t, c, gvk, "held", "ACTIVE")
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NotEmpty(ct, policies(ct, c, tc.name))
		}, wait, tick)
	}

	t.Run("a suspended instance is deleted when asked", func(t *testing.T) {
		for _, c := range spokes {
			held := instance(gvk, "held", nil)
			patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"suspended"}}}`, contract.AnnotationKroReconcile))
			require.NoError(t, c.Patch(ctx, held, client.RawPatch("application/merge-patch+json", patch)))
			requireDeleted(t, c, instance(gvk, "held", nil))
			_, err := childNote(c, "held", tc.name)
			assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "its children are deleted")
		}
	})

	tc.remove(t, rgd.DeepCopy())

	t.Run("the admission policy is gone from every spoke", func(t *testing.T) {
		for name, c := range spokes {
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				assert.Empty(ct, policies(ct, c, tc.name))
			}, wait, tick, "policy on %s", name)
		}
	})

	t.Run("instances created before and after can be deleted", func(t *testing.T) {
		for _, c := range spokes {
			createWhenServed(t, c, instance(gvk, "after", map[string]any{}))
			requireDeleted(t, c, instance(gvk, "after", nil))
			requireDeleted(t, c, instance(gvk, "before", nil))
			_, err := childNote(c, "before", tc.name)
			if tc.orphan {
				assert.NoError(t, err, "a released instance leaves its children")
			} else {
				assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "a finalized instance's children are deleted")
			}
		}
	})

	if strings.HasPrefix(tc.name, "rgd-") {
		t.Run("the RGD goes once nothing is left", func(t *testing.T) {
			require.Eventually(t, func() bool { return rgdGone(hubClient, tc.name) }, wait, tick)
		})
	}
}

// Sharing a hub cluster with kro: fleetgraph leaves kro's CRD as it is and
// never writes an RGD outside its selector.
func TestSharingAHubWithKro(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1) // its own: kro's RGD CRD is installed on its hub cluster by another manager
	ctx := context.Background()
	hubClient := newClient(t, fleet.Hub.Config)
	kroCRD, err := v1alpha1.CRD()
	require.NoError(t, err)
	kroCRD.Labels = map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	require.NoError(t, hubClient.Create(ctx, kroCRD, client.FieldOwner("helm")))
	require.Eventually(t, func() bool {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if hubClient.Get(ctx, client.ObjectKey{Name: kroCRD.Name}, got) != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	}, wait, tick)
	before := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, hubClient.Get(ctx, client.ObjectKey{Name: kroCRD.Name}, before))

	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	selector := labels.SelectorFromSet(labels.Set{"fleetgraph.dev/hub": "test"})
	h := startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true, Selector: selector}})

	require.NoError(t, hubClient.Create(ctx, noteRGD(t, "kros", "KroNote")))
	ours := noteRGD(t, "ours", "OurNote")
	ours.Labels = map[string]string{"fleetgraph.dev/hub": "test"}
	require.NoError(t, hubClient.Create(ctx, ours))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, hubClient.Get(ctx, client.ObjectKey{Name: "ours"}, rgd))
		assert.Equal(ct, v1alpha1.StateActive, rgd.Status.State)
		assert.Contains(ct, rgd.Finalizers, v1alpha1.FinalizerRGD)
	}, wait, tick)

	kros := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, hubClient.Get(ctx, client.ObjectKey{Name: "kros"}, kros))
	assert.Empty(t, kros.Status.Conditions, "no status on an RGD we do not claim")
	assert.Empty(t, kros.Status.State)
	assert.Empty(t, kros.Finalizers)
	for _, mf := range kros.ManagedFields {
		assert.NotEqual(t, "fleetgraph", mf.Manager)
	}
	assert.NotContains(t, h.Graphs(), "kros")

	after := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, hubClient.Get(ctx, client.ObjectKey{Name: kroCRD.Name}, after))
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "the CRD another manager installed is not written")
	assert.Equal(t, "Helm", after.Labels["app.kubernetes.io/managed-by"])
	for _, mf := range after.ManagedFields {
		assert.NotEqual(t, "fleetgraph", mf.Manager)
	}
}

// A hub that restarts while an RGD is being deleted finishes the removal:
// the RGD's finalizer holds it until then.
func TestRGDRemovalResumesAfterRestart(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1) // its own: the RGD controller claims every RGD on its hub cluster
	ctx := context.Background()
	hubClient := newClient(t, fleet.Hub.Config)
	spokeClient := newClient(t, fleet.Spoke("spoke-1").Config)
	gvk := noteGVK("ResumeNote")

	t.Run("the first hub serves the RGD and stops", func(t *testing.T) {
		provider, err := fleet.NewProvider(ctx)
		require.NoError(t, err)
		startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
		require.NoError(t, hubClient.Create(ctx, noteRGD(t, "resume", "ResumeNote")))
		createWhenServed(t, spokeClient, instance(gvk, "x", map[string]any{}))
		requireState(t, spokeClient, gvk, "x", "ACTIVE")
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.NotEmpty(ct, policies(ct, spokeClient, "resume"))
		}, wait, tick)
	})

	require.NoError(t, hubClient.Delete(ctx, noteRGD(t, "resume", "")))
	assert.False(t, rgdGone(hubClient, "resume"), "the finalizer holds the RGD while no hub runs")

	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	startHub(t, fleet.Hub.Config, provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Empty(ct, policies(ct, spokeClient, "resume"))
	}, wait, tick, "the restarted hub takes the policy off")
	assert.False(t, rgdGone(hubClient, "resume"), "an instance still holds the finalizer")
	requireDeleted(t, spokeClient, instance(gvk, "x", nil))
	_, err = childNote(spokeClient, "x", "resume")
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "the instance was finalized: its children are gone")
	require.Eventually(t, func() bool { return rgdGone(hubClient, "resume") }, wait, tick)
}

// A spoke that cannot be reached holds a removal, which keeps retrying it;
// the other spokes are cleaned at once, and the removal completes when the
// dead spoke leaves the fleet.
func TestADeadSpokeHoldsARemovalOnlyUntilItLeaves(t *testing.T) {
	t.Parallel()
	fleet, provider, h := startHubWithDeadSpoke(t)
	ctx := context.Background()
	require.NoError(t, h.RegisterGraph(ctx, noteRGD(t, "doomed", "DoomedNote")))
	c1 := newClient(t, fleet.Spoke("spoke-1").Config)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NotEmpty(ct, policies(ct, c1, "doomed"))
	}, wait, tick)

	require.NoError(t, h.UnregisterGraph(ctx, "doomed"))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Empty(ct, policies(ct, c1, "doomed"))
	}, wait, tick, "the live spoke is cleaned at once")
	twin := noteRGD(t, "twin", "DoomedNote")
	err := h.RegisterGraph(ctx, twin)
	assert.ErrorIs(t, err, sdk.ErrKindTaken)
	assert.Contains(t, err.Error(), "being removed")
	// Longer than the removal's own settling time after the live spoke was
	// cleaned: only the dead spoke can still hold it.
	assert.Never(t, func() bool { return h.RegisterGraph(ctx, twin) == nil }, 10*time.Second, 250*time.Millisecond,
		"the removal is not done while a spoke was not cleaned")

	provider.Remove("spoke-2")
	require.Eventually(t, func() bool { return h.RegisterGraph(ctx, twin) == nil }, wait, tick,
		"the removal completes once the dead spoke leaves")
}
