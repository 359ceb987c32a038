//go:build integration

package hub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/hub"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// transitions records a FanOut's OnTransition calls.
type transitions struct {
	mu   sync.Mutex
	seen []string // cluster/state
}

func (tr *transitions) record(_, cluster string, state hub.CRDState, _ string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.seen = append(tr.seen, cluster+"/"+string(state))
}

func (tr *transitions) since(n int) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.seen[n:]...)
}

func (tr *transitions) len() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.seen)
}

// A CRD the FanOut established, deleted by hand on one cluster, is shown
// not established there at once and is back, established, within
// seconds: the FanOut watches for it, it does not wait for a resync. The
// other cluster's CRD is left alone.
func TestADeletedCRDComesBackWithinSeconds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	provider, err := fleet.NewProvider(ctx)
	require.NoError(t, err)
	mgr, err := mcmanager.New(fleet.Hub.Config, provider, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	tr := &transitions{}
	f := hub.New(hub.Options{OnTransition: tr.record})
	require.NoError(t, mgr.Add(f))
	fgtesting.Start(t, mgr.Start)

	gvk := schema.GroupVersionKind{Group: "repair.fleetgraph.dev", Version: "v1", Kind: "Doohickey"}
	g := graphOf("doohickeys", gvk, "doohickeys")
	f.Serve(g)
	both := map[string]hub.CRDState{"spoke-1": hub.CRDEstablished, "spoke-2": hub.CRDEstablished}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, both, states(f.Status("doohickeys")))
	}, wait, tick)
	c1 := newTestClient(t, fleet.Spoke("spoke-1"))
	c2 := newTestClient(t, fleet.Spoke("spoke-2"))
	uid1, uid2 := crdUID(t, c1, g.CRD.Name), crdUID(t, c2, g.CRD.Name)

	before := tr.len()
	deleted := time.Now()
	require.NoError(t, c1.Delete(ctx, crdNamed(g.CRD.Name)))
	require.Eventually(t, func() bool {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if c1.Get(ctx, client.ObjectKey{Name: g.CRD.Name}, crd) != nil || crd.UID == uid1 {
			return false
		}
		return established(crd)
	}, 10*time.Second, 50*time.Millisecond, "the deleted CRD is back, established, within 10 s")
	t.Logf("CRD back %v after its deletion", time.Since(deleted).Round(time.Millisecond))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, both, states(f.Status("doohickeys")))
	}, wait, tick)
	seen := tr.since(before)
	require.NotEmpty(t, seen)
	assert.Equal(t, "spoke-1/"+string(hub.CRDMissing), seen[0], "the loss is shown first: %v", seen)
	assert.Equal(t, "spoke-1/"+string(hub.CRDEstablished), seen[len(seen)-1], "then the CRD established again: %v", seen)
	for _, s := range seen {
		assert.NotContains(t, s, "spoke-2/", "the other cluster never lost it")
	}
	assert.Equal(t, uid2, crdUID(t, c2, g.CRD.Name), "the other cluster's CRD was left alone")

	// Once the graph is stopped, its CRD is no longer kept.
	f.Stop("doohickeys")
	uid1 = crdUID(t, c1, g.CRD.Name)
	require.NoError(t, c1.Delete(ctx, crdNamed(g.CRD.Name)))
	require.Eventually(t, func() bool {
		return c1.Get(ctx, client.ObjectKey{Name: g.CRD.Name}, &apiextensionsv1.CustomResourceDefinition{}) != nil
	}, wait, tick)
	// A repair starts within 200 ms of the deletion; give it ten times that.
	require.Never(t, func() bool {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		return c1.Get(ctx, client.ObjectKey{Name: g.CRD.Name}, crd) == nil && crd.UID != uid1
	}, 2*time.Second, 50*time.Millisecond, "a stopped graph's CRD is not put back")
}

func newTestClient(t *testing.T, c *fgtesting.Cluster) client.Client {
	t.Helper()
	cl, err := client.New(c.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return cl
}

func crdUID(t *testing.T, c client.Client, name string) types.UID {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, crd))
	return crd.UID
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func crdNamed(name string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = name
	return crd
}
