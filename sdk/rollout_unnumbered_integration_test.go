//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// disownRevisionCRD makes the hub's GraphRevision CRD one fleetgraph does
// not own (owned, when false) by its managed-by label: a revision store
// that has not installed it yet refuses to issue revisions, while the
// records stay readable.
func disownRevisionCRD(t *testing.T, c client.Client, owned bool) {
	t.Helper()
	value := "null"
	if owned {
		value = fmt.Sprintf("%q", v1alpha1.ManagedByFleetgraph)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s}}}`, v1alpha1.LabelManagedBy, value)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = fgv1alpha1.GraphRevisionCRD().Name
	require.NoError(t, c.Patch(context.Background(), crd, client.RawPatch(types.MergePatchType, patch)))
}

// A hub restarted while its revision store fails serves a new spec
// unnumbered; the rollout holds it back: the canary that failed the
// target and the main wave (not reached, waiting for approval) keep
// revision 1, and the canary that took revision 2 keeps it. Once the
// store works again, the hub records the spec as revision 3, and it goes
// through the rollout: the canary wave first, the main wave once approved.
func TestAnUnnumberedSpecWaitsForItsNumberAndTheRollout(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 3) // its own: the rollout controller reads every GraphRollout on its hub cluster
	canary, main := map[string]string{"ring": "canary"}, map[string]string{"ring": "main"}
	labels := map[string]map[string]string{"spoke-1": canary, "spoke-2": canary, "spoke-3": main}
	spokes := clientsOf(t, fleet)
	refuseVersion(t, spokes["spoke-2"], "2")
	opts := sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}, Rollouts: sdk.RolloutOptions{Resync: rolloutResync}}
	h, stop := startStoppableHub(t, fleet.Hub.Config, newLabelledProvider(t, fleet, labels), opts)
	gvk := webAppGVK.GroupVersion().WithKind("Brook")
	applyRollout(t, fleet.Hub.Config, "brook", restartWaves(failingCanaryDeadline))
	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "brook", "Brook", "1", "")))
	for _, c := range spokes {
		createWhenServed(t, c, instance(gvk, "app", map[string]any{"color": "green"}))
		requireState(t, c, gvk, "app", "ACTIVE")
	}
	requireRollout(t, h, "brook", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 1, "spoke-2": 1, "spoke-3": 1})
	hubClient := newClient(t, fleet.Hub.Config)

	require.NoError(t, h.RegisterGraph(context.Background(), tideRGD(t, "brook", "Brook", "2", "green")))
	waiting := map[string]int64{"spoke-1": 2, "spoke-2": 1, "spoke-3": 1}
	failedAndAwaiting := func(st fgv1alpha1.GraphRolloutStatus) bool {
		return failedOnly(st, "spoke-2", 1) && st.AwaitingApproval == "main" && st.TargetRevision == 2
	}
	requireHeld(t, h, hubClient, waiting, failedAndAwaiting)
	applyRollout(t, fleet.Hub.Config, "brook", restartWaves(60)) // the next canary wave is not judged in a hurry

	// The store fails on the restarted hub: revision 3's spec is served
	// unnumbered.
	stop()
	disownRevisionCRD(t, hubClient, false)
	h2, _ := startStoppableHub(t, fleet.Hub.Config, newLabelledProvider(t, fleet, labels), opts)
	samples := map[string]func() []string{}
	for name, c := range spokes {
		samples[name] = sampleVersion(c, "app")
	}
	rev3 := tideRGD(t, "brook", "Brook", "3", "green")
	require.NoError(t, h2.RegisterGraph(context.Background(), rev3))
	requireHeld(t, h2, hubClient, waiting, failedAndAwaiting)
	for name, want := range map[string]string{"spoke-1": "2", "spoke-2": "1", "spoke-3": "1"} {
		requireVersion(t, spokes[name], "app", want)
	}
	for name, sample := range samples {
		seen := sample()
		assert.NotContains(t, seen, "3", "cluster %s served the unnumbered spec: %v", name, seen)
	}
	gr := &metav1.PartialObjectMetadata{}
	gr.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRevisionKind))
	err := hubClient.Get(context.Background(), client.ObjectKey{Name: fgv1alpha1.RevisionName("brook", 3)}, gr)
	assert.True(t, apierrors.IsNotFound(err), "revision 3 is not recorded while the store fails: %v", err)

	// The store works again: the spec becomes revision 3 and is rolled
	// out, canary first, the main wave once approved.
	disownRevisionCRD(t, hubClient, true)
	canaryDone := map[string]int64{"spoke-1": 3, "spoke-2": 3, "spoke-3": 1}
	requireHeld(t, h2, hubClient, canaryDone, func(st fgv1alpha1.GraphRolloutStatus) bool {
		return st.TargetRevision == 3 && st.AwaitingApproval == "main" && len(st.Failed) == 0
	})
	requireVersion(t, spokes["spoke-2"], "app", "3")
	requireVersion(t, spokes["spoke-3"], "app", "1")
	require.NoError(t, h2.Approve(context.Background(), "brook", "main"))
	requireRollout(t, h2, "brook", fgv1alpha1.RolloutComplete, map[string]int64{"spoke-1": 3, "spoke-2": 3, "spoke-3": 3})
	requireVersion(t, spokes["spoke-3"], "app", "3")
}

// sampleVersion samples, every 100 ms until the returned func is called,
// the version the named instance's ConfigMap on c was written by, and that
// func returns the versions seen, in order, without repeats.
func sampleVersion(c client.Client, inst string) func() []string {
	done, out := make(chan struct{}), make(chan []string)
	go func() {
		var seen []string
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if data, err := configMapData(c, inst+"-tide"); err == nil && (len(seen) == 0 || seen[len(seen)-1] != data["version"]) {
				seen = append(seen, data["version"])
			}
			select {
			case <-done:
				out <- seen
				return
			case <-t.C:
			}
		}
	}()
	return func() []string { close(done); return <-out }
}
