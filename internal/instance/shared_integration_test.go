//go:build integration

package instance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// One behaviour, one implementation: every case below runs through both
// drivers of the engine (drivers_integration_test.go), the spoke runtime
// (instances and children in one cluster) and hub graphs (instances on the
// hub, children on a target), and must come out the same.

// chainRGD renders two children, the second after the first, and
// optionally a forEach of items.
const chainRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: chain
spec:
  schema:
    apiVersion: v1alpha1
    kind: Chain
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

// boundedRGD lets an instance ask for as many children, bytes, status and
// time as it likes.
const boundedRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: bounded
spec:
  schema:
    apiVersion: v1alpha1
    kind: Bounded
    spec:
      size: integer | default=1
      blob: string | default=""
      copies: integer | default=0
      spin: integer | default=0
    status:
      copies: ${lists.range(schema.spec.copies).map(i, schema.spec.blob)}
  resources:
  - id: pieces
    includeWhen:
    - ${lists.range(schema.spec.spin).map(i, i * 2).size() >= 0}
    forEach:
    - i: ${lists.range(schema.spec.size)}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name + "-" + string(i)}
      data:
        blob: ${schema.spec.blob}
`

// placedRGD writes its child in the namespace the instance asks for, and
// reads a ConfigMap where the instance asks.
const placedRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: placed
spec:
  schema:
    apiVersion: v1alpha1
    kind: Placed
    spec:
      childNamespace: string | default=""
      refNamespace: string | default=""
  resources:
  - id: source
    externalRef:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: source
        namespace: ${schema.spec.refNamespace}
  - id: copy
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-copy
        namespace: ${schema.spec.childNamespace}
      data:
        value: ${source.data.value}
`

// sharedCase is one behaviour every driver must have.
type sharedCase struct {
	name string
	rgd  string
	opts instance.Options
	lim  graph.Limits
	run  func(t *testing.T, w *world)
}

var sharedCases = []sharedCase{
	{name: "limits", rgd: boundedRGD, run: limits, lim: graph.Limits{MaxChildren: 3, MaxRenderedBytes: 4096, MaxStatusBytes: 2048,
		ExpressionTimeout: 20 * time.Millisecond, InstanceTimeout: 50 * time.Millisecond, ExpressionCost: 1e12, InstanceCost: 1e12}},
	{name: "adopt-off", rgd: chainRGD, run: adoptionOff},
	{name: "adopt-on", rgd: chainRGD, opts: instance.Options{AdoptUnowned: true}, run: adoptionOn},
	{name: "orphans", rgd: chainRGD, opts: instance.Options{OrphanGrace: 2 * time.Second}, run: orphansCollected},
	{name: "confine", rgd: placedRGD, opts: instance.Options{ConfineToNamespace: true}, run: confinement},
	{name: "drift", rgd: chainRGD, run: driftRepaired},
	{name: "order", rgd: chainRGD, run: deletionOrder},
	{name: "conflict", rgd: chainRGD, run: ownershipConflict},
	{name: "foreign", rgd: chainRGD, run: foreignObjectLeftAlone},
	{name: "external", rgd: placedRGD, run: externalRefChanges},
}

// Every case, through every driver.
func TestEveryDriverBehavesTheSame(t *testing.T) {
	t.Parallel()
	for _, c := range sharedCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			eachDriver(t, c.name, c.rgd, c.opts, c.lim, c.run)
		})
	}
}

// An instance that asks for more than the graph's Limits allow goes to
// ERROR with reason LimitExceeded naming the limit, at the same point
// whichever driver: past MaxChildren nothing of the level is written.
func limits(t *testing.T, w *world) {
	w.create(t, "fits", map[string]any{"size": int64(2)})
	w.create(t, "many", map[string]any{"size": int64(5)})
	w.create(t, "heavy", map[string]any{"blob": strings.Repeat("x", 5000)})
	w.create(t, "wordy", map[string]any{"copies": int64(10), "blob": strings.Repeat("y", 300)})
	w.create(t, "slow", map[string]any{"spin": int64(500000)})

	w.active(t, "fits")
	w.says(t, "many", "ERROR", "LimitExceeded", "Limits.MaxChildren")
	assert.Nil(t, w.child(t, "many-0"), "nothing of a level past MaxChildren is written")
	w.says(t, "heavy", "ERROR", "LimitExceeded", "Limits.MaxRenderedBytes")
	w.says(t, "wordy", "ERROR", "LimitExceeded", "Limits.MaxStatusBytes")
	w.says(t, "slow", "ERROR", "LimitExceeded", "ran longer than") // Limits.ExpressionTimeout, here within InstanceTimeout
	assert.Nil(t, w.child(t, "slow-0"))
	w.childData(t, "fits-1", "blob", "")
}

// Without AdoptUnowned, an existing object without an owner label is not
// taken over: the instance says whose it is and leaves it as it was.
func adoptionOff(t *testing.T, w *world) {
	w.putChild(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "taken-first"}, Data: map[string]string{"owner": "someone"}})
	w.create(t, "taken", nil)
	w.says(t, "taken", "ERROR", instance.ReasonOwnershipConflict, "taken-first", "not ours")
	cm := w.child(t, "taken-first")
	require.NotNil(t, cm)
	assert.Equal(t, map[string]string{"owner": "someone"}, cm.Data, "not written")
	assert.Empty(t, cm.Labels[contract.LabelInstanceUID])
	w.delete(t, "taken")
	w.instanceGone(t, "taken")
	assert.NotNil(t, w.child(t, "taken-first"), "not deleted with the instance")
}

// With AdoptUnowned, the instance takes the object over: it writes it,
// labels it as its child, and deletes it with itself.
func adoptionOn(t *testing.T, w *world) {
	w.putChild(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "adopted-first"}, Data: map[string]string{"owner": "someone"}})
	w.create(t, "adopted", map[string]any{"value": "mine"})
	w.active(t, "adopted")
	w.childData(t, "adopted-first", "value", "mine")
	inst := w.instance(t, "adopted")
	assert.Equal(t, string(inst.GetUID()), w.child(t, "adopted-first").Labels[contract.LabelInstanceUID])
	w.delete(t, "adopted")
	w.gone(t, "adopted-first", "an adopted child is deleted with its instance")
}

// An instance whose finalizer was removed by hand, and which was then
// deleted, leaves no child behind for longer than the orphan grace.
func orphansCollected(t *testing.T, w *world) {
	w.create(t, "unstuck", nil)
	w.active(t, "unstuck")
	// Suspended first, so that no reconcile puts the finalizer back.
	w.patchSpec(t, "unstuck", `{"metadata":{"annotations":{"fleetgraph.dev/reconcile":"suspended"},"finalizers":null}}`)
	w.delete(t, "unstuck")
	w.instanceGone(t, "unstuck")
	w.gone(t, "unstuck-second", "the gone instance's children are collected")
	w.gone(t, "unstuck-first", "the gone instance's children are collected")
}

// Confined to its namespace, an instance writes no child and reads no
// reference outside it.
func confinement(t *testing.T, w *world) {
	other := w.ns + "-other"
	createNamespace(t, w.children, other)
	for _, ns := range []string{w.ns, other} {
		src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "source", Namespace: ns}, Data: map[string]string{"value": ns}}
		require.NoError(t, w.children.Create(context.Background(), src))
	}
	w.create(t, "home", map[string]any{"childNamespace": w.ns, "refNamespace": w.ns})
	w.create(t, "away", map[string]any{"childNamespace": other, "refNamespace": w.ns})
	w.create(t, "peek", map[string]any{"childNamespace": w.ns, "refNamespace": other})

	w.active(t, "home")
	w.childData(t, "home-copy", "value", w.ns)
	w.says(t, "away", "ERROR", instance.ReasonOutsideNamespace, other)
	w.says(t, "peek", "ERROR", instance.ReasonOutsideNamespace, other)
	err := w.children.Get(context.Background(), client.ObjectKey{Namespace: other, Name: "away-copy"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "nothing written outside the namespace: %v", err)
	assert.Nil(t, w.child(t, "peek-copy"), "nothing written from a reference outside the namespace")
}

// A child somebody else changed is put back.
func driftRepaired(t *testing.T, w *world) {
	w.create(t, "drifted", map[string]any{"value": "kept"})
	w.childData(t, "drifted-first", "value", "kept")
	w.patchChild(t, "drifted-first", `{"data":{"value":"changed"}}`)
	w.childData(t, "drifted-first", "value", "kept")
}

// Children are deleted in reverse DAG order: first, which second reads,
// goes only once second is gone; meanwhile the instance says DELETING.
func deletionOrder(t *testing.T, w *world) {
	w.create(t, "ordered", nil)
	w.active(t, "ordered")
	w.patchChild(t, "ordered-second", `{"metadata":{"finalizers":["test.fleetgraph.dev/hold"]}}`)
	w.delete(t, "ordered")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		second := w.child(ct, "ordered-second")
		require.NotNil(ct, second)
		assert.NotNil(ct, second.DeletionTimestamp, "second is being deleted")
	}, wait, tick)
	w.says(t, "ordered", "DELETING", "Deleting", "ordered-second")
	first := w.child(t, "ordered-first")
	require.NotNil(t, first, "first waits for second")
	assert.Nil(t, first.DeletionTimestamp)
	w.patchChild(t, "ordered-second", `{"metadata":{"finalizers":null}}`)
	w.gone(t, "ordered-first", "first goes once second is gone")
	w.instanceGone(t, "ordered")
}

// An object labelled for another instance is never written or deleted:
// the instance says whose it is.
func ownershipConflict(t *testing.T, w *world) {
	w.create(t, "owner", nil)
	w.active(t, "owner")
	theirs := w.child(t, "owner-first")
	w.putChild(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rival-first", Labels: theirs.Labels}, Data: map[string]string{"owner": "owner"}})
	w.create(t, "rival", nil)
	w.says(t, "rival", "ERROR", instance.ReasonOwnershipConflict, "rival-first", "not ours")
	w.delete(t, "rival")
	w.instanceGone(t, "rival")
	cm := w.child(t, "rival-first")
	require.NotNil(t, cm, "not deleted")
	assert.Equal(t, map[string]string{"owner": "owner"}, cm.Data, "not written")
}

// An object that copies an instance's owner labels, and that fleetgraph
// did not write, is none of its children: a prune and the instance's
// deletion leave it, and an event on it says so.
func foreignObjectLeftAlone(t *testing.T, w *world) {
	w.create(t, "copied", nil)
	w.active(t, "copied")
	labels := w.child(t, "copied-first").Labels
	w.putChild(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copied-impostor", Labels: labels}, Data: map[string]string{"mine": "yes"}})
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		events := &corev1.EventList{}
		require.NoError(ct, w.children.List(context.Background(), events, client.InNamespace(w.ns)))
		found := false
		for _, e := range events.Items {
			found = found || e.Reason == instance.ReasonForeignObject && e.InvolvedObject.Name == "copied-impostor"
		}
		assert.True(ct, found, "an event on the impostor says it is left alone")
	}, wait, tick)
	w.patchSpec(t, "copied", `{"spec":{"value":"b"}}`) // a reconcile that prunes
	w.childData(t, "copied-first", "value", "b")
	w.delete(t, "copied")
	w.instanceGone(t, "copied")
	assert.Nil(t, w.child(t, "copied-first"))
	cm := w.child(t, "copied-impostor")
	require.NotNil(t, cm, "the impostor is neither pruned nor deleted")
	assert.Equal(t, map[string]string{"mine": "yes"}, cm.Data)
}

// A child that copies an external reference follows it when it changes.
func externalRefChanges(t *testing.T, w *world) {
	src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "source", Namespace: w.ns}, Data: map[string]string{"value": "v1"}}
	require.NoError(t, w.children.Create(context.Background(), src))
	w.create(t, "reader", nil)
	w.childData(t, "reader-copy", "value", "v1")
	w.active(t, "reader")
	require.NoError(t, w.children.Patch(context.Background(), src, client.RawPatch("application/merge-patch+json", []byte(`{"data":{"value":"v2"}}`))))
	w.childData(t, "reader-copy", "value", "v2")
}
