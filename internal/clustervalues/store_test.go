package clustervalues

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

func cv(name, graph string, match map[string]string, values string) fgv1alpha1.ClusterValues {
	out := fgv1alpha1.ClusterValues{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: fgv1alpha1.ClusterValuesSpec{
		Graph: graph, Values: apiextensionsv1.JSON{Raw: []byte(values)},
	}}
	if match != nil {
		out.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: match}
	}
	return out
}

var (
	prod = map[string]string{"env": "prod", "region": "eu"}
	dev  = map[string]string{"env": "dev"}
)

// Objects merge key by key: every graph's first, then the graph's own, in
// name order, the later winning; numbers decode as JSON's integers.
func TestValuesMergeInOrder(t *testing.T) {
	s := &Store{}
	verdicts := s.Set([]fgv1alpha1.ClusterValues{
		cv("z-webapp-prod", "webapp", map[string]string{"env": "prod"}, `{"replicas": 3, "bucket": "s3://prod"}`),
		cv("a-defaults", "", nil, `{"replicas": 1, "bucket": "s3://none", "team": "platform"}`),
		cv("b-eu", "", map[string]string{"region": "eu"}, `{"bucket": "s3://eu", "zones": ["a", "b"]}`),
		cv("other", "other", nil, `{"replicas": 7}`),
	})
	for name, v := range verdicts {
		assert.True(t, v.Accepted(), name)
	}
	assert.Equal(t, map[string]any{"replicas": int64(3), "bucket": "s3://prod", "team": "platform", "zones": []any{"a", "b"}},
		s.Values("webapp", prod), "the graph's own object wins over every graph's, whatever the names")
	assert.Equal(t, map[string]any{"replicas": int64(1), "bucket": "s3://none", "team": "platform"}, s.Values("webapp", dev))
	assert.Equal(t, map[string]any{"replicas": int64(7), "bucket": "s3://eu", "team": "platform", "zones": []any{"a", "b"}}, s.Values("other", prod))

	s.Set([]fgv1alpha1.ClusterValues{cv("only-prod", "", map[string]string{"env": "prod"}, `{"x": 1.5}`)})
	assert.Nil(t, s.Values("webapp", dev), "no object gives values: none")
	assert.Equal(t, map[string]any{"x": 1.5}, s.Values("webapp", prod))
}

// An object too large, with a bad selector or values that are not an
// object is refused, says why, and gives nothing.
func TestValuesRefused(t *testing.T) {
	s := &Store{}
	bad := cv("bad-selector", "", nil, `{"a": 1}`)
	bad.Spec.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}
	verdicts := s.Set([]fgv1alpha1.ClusterValues{
		cv("huge", "", nil, `{"a": "`+strings.Repeat("x", fgv1alpha1.MaxClusterValuesBytes)+`"}`),
		bad,
		cv("list", "", nil, `[1, 2]`),
		cv("good", "", nil, `{"b": true}`),
	})
	assert.Equal(t, fgv1alpha1.ReasonValuesTooLarge, verdicts["huge"].Reason)
	assert.Contains(t, verdicts["huge"].Message, "MaxClusterValuesBytes")
	assert.Equal(t, fgv1alpha1.ReasonInvalidSelector, verdicts["bad-selector"].Reason)
	assert.Equal(t, fgv1alpha1.ReasonInvalidValues, verdicts["list"].Reason)
	assert.True(t, verdicts["good"].Accepted())
	assert.Equal(t, map[string]any{"b": true}, s.Values("g", prod))
}

// Two objects of one rank that disagree on a key conflict, reported on
// the loser with the winner and the clusters; a graph's own object over
// every graph's does not, nor two that agree.
func TestValuesConflictsAreReportedOnTheLoser(t *testing.T) {
	s := &Store{}
	s.Set([]fgv1alpha1.ClusterValues{
		cv("a", "", nil, `{"replicas": 1, "same": "x"}`),
		cv("b", "", map[string]string{"env": "prod"}, `{"replicas": 2, "same": "x"}`),
		cv("c", "webapp", nil, `{"replicas": 5}`),
	})
	reports := s.Report(map[string]map[string]string{"p1": prod, "p2": prod, "p3": prod, "p4": prod, "d1": dev})
	assert.EqualValues(t, 5, reports["a"].Clusters)
	assert.EqualValues(t, 4, reports["b"].Clusters)
	require.Len(t, reports["a"].Conflicts, 1)
	assert.Equal(t, Conflict{Key: "replicas", Winner: "b", Clusters: 4, Names: []string{"p1", "p2", "p3"}}, reports["a"].Conflicts[0])
	assert.Equal(t, `key "replicas" is overridden by "b" on cluster "p1", "p2", "p3" and 1 more`, reports["a"].Message())
	assert.Empty(t, reports["b"].Conflicts)
	assert.Empty(t, reports["c"].Conflicts, "a graph's own values over every graph's are no conflict")
}

// Only a change of spec is a change: the same objects with a new status
// are not.
func TestStoreTellsSpecChanges(t *testing.T) {
	s := &Store{}
	items := []fgv1alpha1.ClusterValues{cv("a", "", nil, `{"x": 1}`)}
	items[0].Generation = 1
	assert.True(t, s.Changed(items), "a first Set is a change")
	s.Set(items)
	items[0].Status.Clusters = 3
	assert.False(t, s.Changed(items))
	items[0].Generation = 2
	assert.True(t, s.Changed(items))
	assert.True(t, s.Changed(nil), "deleted")
}
