package rgd

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// An RGD kro accepts but that carries a warning (here a "${" nothing
// closes, which kro serves as text) stays GraphAccepted=True with kro's
// reason; the condition's message keeps kro's words first, then counts
// and quotes the warning, and a Warning event names resource, path and
// expression, once per generation.
func TestWarningsAreOnTheRGD(t *testing.T) {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: paint, generation: 1}
spec:
  schema: {apiVersion: v1alpha1, kind: Paint, spec: {color: string}}
  resources:
  - id: config
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {color: 'a ${schema.spec.color'}}
`), rgd))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	require.Len(t, g.Warnings, 1, "the test needs a graph with one warning")
	rec := events.NewFakeRecorder(20)
	r := &Reconciler{Registry: statusOnly{hub.GraphStatus{}}, Recorder: rec}

	st := r.status(rgd, g, nil)
	accepted := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGraphAccepted)
	require.NotNil(t, accepted)
	assert.Equal(t, "True", string(accepted.Status))
	assert.Equal(t, "Valid", accepted.Reason)
	assert.True(t, strings.HasPrefix(accepted.Message, "resource graph and schema are valid, with 1 warning:\n"), accepted.Message)
	assert.Contains(t, accepted.Message, `resource "config": data.color`)
	require.Len(t, rec.Events, 1)
	ev := <-rec.Events
	assert.Contains(t, ev, "GraphWarning")
	assert.Contains(t, ev, `resource "config": data.color`)

	rgd.Status = st
	r.status(rgd, g, nil)
	assert.Empty(t, rec.Events, "the same warnings on the same generation are not recorded again")
	rgd.Generation = 2
	r.status(rgd, g, nil)
	assert.Len(t, rec.Events, 1, "a new generation that still carries them is")
}

// A graph without warnings keeps kro's message exactly.
func TestNoWarningKeepsKrosMessage(t *testing.T) {
	assert.Equal(t, "resource graph and schema are valid", warnedMessage(nil))
	many := make([]graph.Warning, 3)
	for i := range many {
		many[i] = graph.Warning{ResourceID: "r", Path: "data.x", Message: "m"}
	}
	assert.True(t, strings.HasPrefix(warnedMessage(many), "resource graph and schema are valid, with 3 warnings:\n"))
}
