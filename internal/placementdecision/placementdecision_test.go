package placementdecision

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kro "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// decision is a PlacementDecision slice in ns "sched" listing clusters.
func decision(name string, labels map[string]string, clusters ...string) *ciav1alpha1.PlacementDecision {
	d := &ciav1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "sched", Name: name, Labels: labels}}
	for _, c := range clusters {
		d.Decisions = append(d.Decisions, ciav1alpha1.ClusterDecision{ClusterProfileRef: ciav1alpha1.ClusterProfileReference{Name: c, Namespace: "elsewhere"}})
	}
	return d
}

func reader(objs ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).Build()
}

func keyed(key string) map[string]string { return map[string]string{ciav1alpha1.DecisionKeyLabel: key} }

func TestReadUnitesTheNamedDecisionAndItsSlices(t *testing.T) {
	got, err := Read(context.Background(), reader(
		decision("web", nil, "a", "b"),
		decision("web-1", keyed("web"), "c"),
		decision("web-2", keyed("web"), "b", "d"),
		decision("other", keyed("other"), "x"),
		decision("web-3", keyed("web")), // an empty slice adds none
	), "sched", "web")
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"a": true, "b": true, "c": true, "d": true}, got,
		"the clusterProfileRef's namespace is not compared")
}

func TestReadByDecisionKeyAlone(t *testing.T) {
	got, err := Read(context.Background(), reader(decision("web-0", keyed("web"), "a")), "sched", "web")
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"a": true}, got)
}

func TestReadAnEmptyDecisionPlacesNothing(t *testing.T) {
	got, err := Read(context.Background(), reader(decision("web", nil)), "sched", "web")
	require.NoError(t, err)
	assert.NotNil(t, got, "a decision of none is not the absence of a decision")
	assert.Empty(t, got)
}

func TestReadRefusesWhatItCannotTrust(t *testing.T) {
	_, err := Read(context.Background(), reader(decision("web", nil, "a")), "other-ns", "web")
	assert.ErrorIs(t, err, ErrNotFound)

	huge := make([]string, MaxPerSlice+1)
	for i := range huge {
		huge[i] = fmt.Sprintf("c%d", i)
	}
	_, err = Read(context.Background(), reader(decision("web", nil, huge...)), "sched", "web")
	assert.ErrorIs(t, err, ErrTooManyClusters)

	// A name that cannot be a label value is read by name only.
	long := strings.Repeat("w", 64)
	got, err := Read(context.Background(), reader(decision(long, nil, "a")), "sched", long)
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"a": true}, got)
}

func TestReadCountsSlicesBeyondTheLimit(t *testing.T) {
	// The fake client does not page (the API server's limit does, and
	// Read reads one page of MaxSlices); the named slice plus MaxSlices
	// labelled ones are one too many all the same.
	objs := []client.Object{decision("web", nil, "a")}
	for i := range MaxSlices {
		objs = append(objs, decision(fmt.Sprintf("web-%d", i), keyed("web"), "a"))
	}
	_, err := Read(context.Background(), reader(objs...), "sched", "web")
	assert.ErrorIs(t, err, ErrTooManySlices)
}

// A cache (the hub reads decisions from one) stops a List at its limit
// and answers a continue token that means nothing: too many slices are
// still refused, never read as the first MaxSlices, and a few are read.
func TestReadRefusesTooManySlicesFromACache(t *testing.T) {
	var objs []client.Object
	for i := range MaxSlices + 5 {
		objs = append(objs, decision(fmt.Sprintf("web-%d", i), keyed("web"), "a"))
	}
	cached := func(objs ...client.Object) client.Reader {
		return interceptor.NewClient(fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).Build(), interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if err := c.List(ctx, list, opts...); err != nil {
					return err
				}
				o := (&client.ListOptions{}).ApplyOptions(opts)
				l := list.(*ciav1alpha1.PlacementDecisionList)
				if o.Limit > 0 && int64(len(l.Items)) > o.Limit {
					l.Items = l.Items[:o.Limit]
				}
				l.Continue = "continue-not-supported"
				return nil
			},
		})
	}
	_, err := Read(context.Background(), cached(objs...), "sched", "web")
	assert.ErrorIs(t, err, ErrTooManySlices)
	got, err := Read(context.Background(), cached(objs[:2]...), "sched", "web")
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"a": true}, got)
}

func TestSlicesSplitSortedAndLabelled(t *testing.T) {
	var clusters []string
	for i := 249; i >= 0; i-- {
		clusters = append(clusters, fmt.Sprintf("c%03d", i))
	}
	clusters = append(clusters, "c000") // twice: once
	got, err := Slices("web", "pub", clusters)
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i, s := range got {
		assert.Equal(t, fmt.Sprintf("web-%d", i), s.Name)
		assert.Equal(t, "pub", s.Namespace)
		assert.Equal(t, SchedulerName, s.SchedulerName)
		assert.Equal(t, map[string]string{
			kro.LabelManagedBy:             kro.ManagedByFleetgraph,
			ciav1alpha1.DecisionKeyLabel:   "web",
			ciav1alpha1.PlacementKeyLabel:  "web",
			ciav1alpha1.DecisionIndexLabel: fmt.Sprint(i),
		}, s.Labels)
	}
	assert.Len(t, got[0].Decisions, MaxPerSlice)
	assert.Len(t, got[1].Decisions, MaxPerSlice)
	assert.Len(t, got[2].Decisions, 50)
	assert.Equal(t, "c000", got[0].Decisions[0].ClusterProfileRef.Name)
	assert.Equal(t, "c100", got[1].Decisions[0].ClusterProfileRef.Name)
	assert.Equal(t, "c249", got[2].Decisions[49].ClusterProfileRef.Name)
}

func TestSlicesOfNoClusterIsOneEmptySlice(t *testing.T) {
	got, err := Slices("web", "pub", nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.NotNil(t, got[0].Decisions, "decisions is required: an empty list, not null")
	assert.Empty(t, got[0].Decisions)
}

func TestSlicesRefuseANameThatCannotBeAKey(t *testing.T) {
	_, err := Slices(strings.Repeat("w", 64), "pub", []string{"a"})
	assert.ErrorIs(t, err, ErrNotLabel)
}

// Labels alone are not ownership: our field manager must have written it.
func TestOursNeedsOurFieldManager(t *testing.T) {
	p := &Publisher{FieldManager: "fleetgraph"}
	s := decision("web-0", map[string]string{kro.LabelManagedBy: kro.ManagedByFleetgraph})
	assert.False(t, p.ours(s), "a copied label")
	s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "fleetgraph"}}
	assert.True(t, p.ours(s))
	s.Labels = nil
	assert.False(t, p.ours(s), "our manager without our label (someone took the label off)")
}
