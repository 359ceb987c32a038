package rgd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// Ready and state follow kro: Active and Ready only when GraphAccepted,
// KindReady and ControllerReady are all True; otherwise Ready carries the
// failing condition's reason and message.
func TestReadyFollowsItsDependents(t *testing.T) {
	all := func(kind metav1.ConditionStatus) *v1alpha1.ResourceGraphDefinitionStatus {
		st := &v1alpha1.ResourceGraphDefinitionStatus{}
		setCondition(st, v1alpha1.ConditionGraphAccepted, metav1.ConditionTrue, "Valid", "ok", 1)
		setCondition(st, v1alpha1.ConditionKindReady, kind, "Failed", "kind X cannot be served on 1 of 2 clusters", 1)
		setCondition(st, v1alpha1.ConditionControllerReady, metav1.ConditionTrue, "Running", "controller is running", 1)
		return st
	}

	st := all(metav1.ConditionTrue)
	setReady(st, 1)
	assert.Equal(t, v1alpha1.StateActive, st.State)
	assert.True(t, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady))

	st = all(metav1.ConditionFalse)
	setReady(st, 1)
	assert.Equal(t, v1alpha1.StateInactive, st.State)
	ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, "Failed", ready.Reason)
	assert.Contains(t, ready.Message, "1 of 2 clusters")

	st = &v1alpha1.ResourceGraphDefinitionStatus{}
	setReady(st, 1)
	assert.Equal(t, v1alpha1.StateInactive, st.State, "nothing known yet is not Active")
	assert.Equal(t, metav1.ConditionUnknown, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady).Status)
}

// statusOnly is a Registry whose graphs have the given fleet status.
type statusOnly struct{ hub.GraphStatus }

func (statusOnly) Register(context.Context, *v1alpha1.ResourceGraphDefinition) (*graph.Graph, error) {
	return nil, nil
}
func (statusOnly) Serving(string) *graph.Graph { return nil }
func (statusOnly) Revision(string) int64       { return 0 }
func (statusOnly) Remove(context.Context, *v1alpha1.ResourceGraphDefinition) (bool, error) {
	return true, nil
}
func (s statusOnly) Status(string) hub.GraphStatus { return s.GraphStatus }

// An RGD is not Ready while a cluster it is placed on has not served it
// (Pending, Unreachable) or while a hub replica has not reported its
// clusters; it is Ready once every listed cluster serves it.
func TestRGDIsNotReadyUntilEveryClusterServes(t *testing.T) {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: paint, generation: 1}
spec:
  schema: {apiVersion: v1alpha1, kind: Paint, spec: {color: string}}
  resources:
  - id: config
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {color: '${schema.spec.color}'}}
`), rgd))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	established := hub.ClusterStatus{Cluster: "a", CRD: hub.CRDEstablished}
	for _, tc := range []struct {
		name   string
		status hub.GraphStatus
		ready  metav1.ConditionStatus
		reason string
	}{
		{"pending", hub.GraphStatus{Clusters: []hub.ClusterStatus{established, {Cluster: "b", CRD: hub.CRDPending}}}, metav1.ConditionFalse, "Failed"},
		{"unreachable", hub.GraphStatus{Clusters: []hub.ClusterStatus{established, {Cluster: "b", CRD: hub.CRDUnreachable}}}, metav1.ConditionFalse, "Failed"},
		{"awaiting a replica", hub.GraphStatus{Clusters: []hub.ClusterStatus{established}, AwaitingReplicas: []string{"r2"}}, metav1.ConditionFalse, "AwaitingReplicas"},
		{"served everywhere", hub.GraphStatus{Clusters: []hub.ClusterStatus{established}}, metav1.ConditionTrue, "Ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Registry: statusOnly{tc.status}}
			st := r.status(rgd, g, nil)
			kind := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionKindReady)
			require.NotNil(t, kind)
			assert.Equal(t, tc.reason, kind.Reason)
			assert.Equal(t, tc.ready, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady).Status)
		})
	}
}

// A compile can fail with more errors than a condition holds (2000
// resources, one error each): the API server refuses a status whose
// condition message passes 32768 characters, so the refusal is cut to fit,
// at a line's end, or the RGD would show no condition at all.
func TestARefusalLongerThanAConditionHoldsIsCutToFit(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "resource \"r%d\": data.v: ${schema.spec.missing%d}: undefined field 'missing%d'\n", i, i, i)
	}
	long := strings.TrimSuffix(b.String(), "\n")
	require.Greater(t, len(long), maxConditionMessage)
	rgd := &v1alpha1.ResourceGraphDefinition{}
	rgd.Generation = 3
	st := &v1alpha1.ResourceGraphDefinitionStatus{}
	(&Reconciler{}).rejected(rgd, st, errors.New(long))

	got := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGraphAccepted)
	require.NotNil(t, got)
	assert.Equal(t, metav1.ConditionFalse, got.Status)
	assert.LessOrEqual(t, len(got.Message), maxConditionMessage)
	assert.True(t, strings.HasPrefix(got.Message, `resource "r0": data.v: ${schema.spec.missing0}`), got.Message[:100])
	before, left, ok := strings.Cut(got.Message, "\n… and ")
	require.True(t, ok, "the cut says so")
	assert.True(t, strings.HasPrefix(long, before+"\n"), "the cut is at a line's end")
	assert.Equal(t, fmt.Sprintf("%d more bytes of errors", len(long)-len(before)), left)

	short := "resource \"a\": forEach: at most 10 iterators, got 11"
	(&Reconciler{}).rejected(rgd, st, errors.New(short))
	assert.Equal(t, short, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGraphAccepted).Message, "a short one is whole")
}
