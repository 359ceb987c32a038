package rgd

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// patchesOnly is a client whose patches are computed, as the real client
// computes them before it sends them, and recorded, but go nowhere.
func patchesOnly(sent *[]string) client.Client {
	record := func(obj client.Object, patch client.Patch) error {
		data, err := patch.Data(obj)
		*sent = append(*sent, string(data))
		return err
	}
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(fgtesting.NewScheme()).Build(), interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
			return record(obj, patch)
		},
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
			return record(obj, patch)
		},
	})
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A tenant's RGD may carry a megabyte of spec (an enum, a default). Adding
// the finalizer and writing the status cost what they change, not what
// the spec holds: a patch computed from the whole object encodes, decodes
// and compares the spec twice (4 MB allocated, and seconds under the race
// detector on a loaded machine, while the RGD controller's worker waited).
func TestWritingAMegabyteRGDCostsWhatChanges(t *testing.T) {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: big, generation: 1, resourceVersion: "7"}
spec:
  schema: {apiVersion: v1alpha1, kind: Big, spec: {a: "string | enum=`+strings.Repeat("abcdefghij,", 100_000)+`z"}}
  resources:
  - id: config
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`), rgd))
	var sent []string
	r := &Reconciler{Client: patchesOnly(&sent)}
	ctx := context.Background()
	const bound = 256 << 10 // a quarter of the spec

	took := allocated(func() { require.NoError(t, r.claim(ctx, rgd)) })
	assert.Less(t, took, uint64(bound), "adding the finalizer allocated %d bytes", took)
	require.Len(t, sent, 1)
	assert.JSONEq(t, `{"metadata":{"finalizers":["`+v1alpha1.FinalizerRGD+`"],"resourceVersion":"7"}}`, sent[0])

	st := *rgd.Status.DeepCopy()
	setCondition(&st, v1alpha1.ConditionGraphAccepted, metav1.ConditionFalse, "InvalidResourceGraph", "too big", 1)
	took = allocated(func() { require.NoError(t, r.writeStatus(ctx, rgd, st)) })
	assert.Less(t, took, uint64(bound), "writing the status allocated %d bytes", took)
	require.Len(t, sent, 2)
	assert.Contains(t, sent[1], `"status":{"conditions":[`)
	assert.NotContains(t, sent[1], "spec")
	assert.NotNil(t, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGraphAccepted))
}

// The cache can be behind the API server by a megabyte RGD's watch event,
// tens of seconds on a loaded hub: the finalizer added by the last
// reconcile is missing from the cached copy, and adding it again
// conflicts. The claim reads the RGD live once and goes on, rather than
// failing every reconcile until the cache catches up.
func TestAClaimOnAStaleCopyReadsTheRGDLive(t *testing.T) {
	ctx := context.Background()
	stored := &v1alpha1.ResourceGraphDefinition{}
	stored.Name = "paint"
	c := fake.NewClientBuilder().WithScheme(fgtesting.NewScheme()).WithObjects(stored).Build()
	stale := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "paint"}, stale))
	r := &Reconciler{Client: c}
	require.NoError(t, r.claim(ctx, stored.DeepCopy()), "the first claim adds the finalizer")

	require.NoError(t, r.claim(ctx, stale), "a claim on the copy from before it")
	assert.Contains(t, stale.Finalizers, v1alpha1.FinalizerRGD, "the caller has the live object")
	live := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "paint"}, live))
	assert.Equal(t, []string{v1alpha1.FinalizerRGD}, live.Finalizers)
	assert.Equal(t, live.ResourceVersion, stale.ResourceVersion)
}
