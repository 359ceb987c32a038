//go:build integration

package examples_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var rgdResource = schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "resourcegraphdefinitions"}

// Every RGD under examples/ is applied as its YAML says (the object
// created from the document, as kubectl apply creates a new one) to a real
// hub run with the defaults: the RGD controller on, and with it the
// schema resolver reading the hub's OpenAPI, so child kinds are typed as
// the API server serves them. Each must be accepted (GraphAccepted=True)
// and Ready: what a user who applies the example gets.
func TestEveryExampleRGDIsReadyOnAHubWithTheRGDController(t *testing.T) {
	fgtesting.SetupLogs()
	found, _ := findRGDs(t, ".")
	require.NotEmpty(t, found)

	fleet := fgtesting.StartFleet(t, 1)
	ctx := context.Background()
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	hub, err := sdk.NewHub(provider, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
	require.NoError(t, err)
	fgtesting.Start(t, func(ctx context.Context) error { return hub.Run(ctx, fleet.Hub.Config) })
	dyn, err := dynamic.NewForConfig(fleet.Hub.Config)
	require.NoError(t, err)
	rgds := dyn.Resource(rgdResource)

	for _, r := range found {
		obj, err := r.Object()
		require.NoError(t, err, r.Source)
		t.Run(obj.GetName(), func(t *testing.T) {
			t.Parallel()
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				_, err := rgds.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{})
				assert.NoError(ct, err, "the hub installs the RGD CRD as it starts")
			}, time.Minute, 200*time.Millisecond)
			var conds []metav1.Condition
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				got, err := rgds.Get(ctx, obj.GetName(), metav1.GetOptions{})
				require.NoError(ct, err)
				conds = conditions(ct, got)
				for _, typ := range []string{v1alpha1.ConditionGraphAccepted, v1alpha1.ConditionReady} {
					c := meta.FindStatusCondition(conds, typ)
					if assert.NotNil(ct, c, "%s: no %s condition yet", r.Source, typ) {
						assert.Equal(ct, metav1.ConditionTrue, c.Status, "%s: %s=%s %s: %s", r.Source, typ, c.Status, c.Reason, c.Message)
					}
				}
			}, 2*time.Minute, 200*time.Millisecond, "%s is accepted and Ready", r.Source)
		})
	}
}

// conditions reads an RGD's status.conditions.
func conditions(t assert.TestingT, u *unstructured.Unstructured) []metav1.Condition {
	raw, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if !assert.NoError(t, err) {
		return nil
	}
	out := make([]metav1.Condition, 0, len(raw))
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if assert.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c)) {
			out = append(out, c)
		}
	}
	return out
}
