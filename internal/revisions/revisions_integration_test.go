//go:build integration

package revisions

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// requests counts a client's reads and writes.
type requests struct{ gets, lists, creates atomic.Int32 }

func (r *requests) client(t *testing.T, c client.WithWatch) client.Client {
	t.Helper()
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			r.gets.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			r.lists.Add(1)
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			r.creates.Add(1)
			return c.Create(ctx, obj, opts...)
		},
	})
}

func (r *requests) take() [3]int32 {
	return [3]int32{r.gets.Swap(0), r.lists.Swap(0), r.creates.Swap(0)}
}

func colorRGD(t *testing.T, name, color string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(fmt.Appendf(nil, `
metadata: {name: %s}
spec:
  schema: {apiVersion: v1alpha1, kind: Paint, spec: {color: string | default=%q}}
  resources:
  - id: config
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {color: '${schema.spec.color}'}}
`, name, color), rgd))
	return rgd
}

// TestRevisionsIssueWithOneWrite: a new graph's revision, and a changed
// spec's, cost one create and no list; the spec of the latest record costs
// one read. A store that did not issue the latest record (another
// replica's, or one from before a restart) finds it when its create
// collides, and numbers after it.
func TestRevisionsIssueWithOneWrite(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 0)
	ctx := context.Background()
	direct, err := client.NewWithWatch(fleet.Hub.Config, client.Options{})
	require.NoError(t, err)
	var counted requests
	r := New(counted.client(t, direct), "")
	require.NoError(t, r.Install(ctx))
	counted.take()

	rev, err := r.Issue(ctx, colorRGD(t, "paint", "red"))
	require.NoError(t, err)
	assert.EqualValues(t, 1, rev)
	assert.Equal(t, [3]int32{0, 0, 1}, counted.take(), "a new graph: one create (gets, lists, creates)")

	rev, err = r.Issue(ctx, colorRGD(t, "paint", "blue"))
	require.NoError(t, err)
	assert.EqualValues(t, 2, rev)
	assert.Equal(t, [3]int32{0, 0, 1}, counted.take(), "a changed spec: one create")

	rev, err = r.Issue(ctx, colorRGD(t, "paint", "blue"))
	require.NoError(t, err)
	assert.EqualValues(t, 2, rev)
	assert.Equal(t, [3]int32{1, 0, 0}, counted.take(), "the latest spec again: one read that no later record exists")

	other := New(direct, "") // another replica, or this hub restarted
	rev, err = other.Issue(ctx, colorRGD(t, "paint", "blue"))
	require.NoError(t, err)
	assert.EqualValues(t, 2, rev, "the latest record is found, not duplicated")
	rev, err = other.Issue(ctx, colorRGD(t, "paint", "green"))
	require.NoError(t, err)
	assert.EqualValues(t, 3, rev)

	rev, err = r.Issue(ctx, colorRGD(t, "paint", "green"))
	require.NoError(t, err)
	assert.EqualValues(t, 3, rev, "a record another store issued is found when the number is taken")
	rev, err = r.Issue(ctx, colorRGD(t, "paint", "red"))
	require.NoError(t, err)
	assert.EqualValues(t, 4, rev, "an older spec again is a new revision")

	rev, err = r.Issue(ctx, colorRGD(t, "other", "red"))
	require.NoError(t, err)
	assert.EqualValues(t, 1, rev, "graphs are numbered apart")
}
