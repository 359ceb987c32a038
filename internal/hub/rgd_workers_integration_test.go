//go:build integration

package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// rgdWait bounds what the RGD controller's tests wait for: far above a
// reconcile's few requests on a loaded machine.
const rgdWait = 30 * time.Second

// hangingRegistry refuses every RGD at once, except those named hung-*:
// their Register says it started and then waits until the test ends, as
// a reconcile waits on a slow compile or a slow API server.
type hangingRegistry struct {
	started chan string
	release chan struct{}
}

var _ Registry = hangingRegistry{}

func (r hangingRegistry) Register(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (*graph.Graph, error) {
	if !strings.HasPrefix(rgd.Name, "hung-") {
		return nil, &graph.Error{Path: "spec", Err: errors.New("refused at once")}
	}
	r.started <- rgd.Name
	select {
	case <-r.release:
	case <-ctx.Done():
	}
	return nil, fmt.Errorf("%w: graph %s", ErrCompiling, rgd.Name)
}

func (hangingRegistry) Serving(string) *graph.Graph { return nil }
func (hangingRegistry) Revision(string) int64       { return 0 }
func (hangingRegistry) Remove(context.Context, *v1alpha1.ResourceGraphDefinition) (bool, error) {
	return true, nil
}
func (hangingRegistry) Status(string) GraphStatus { return GraphStatus{} }

// TestASlowRGDDoesNotHoldUpTheOthers: RGDs whose reconciles are slow (a
// tenant's compile bombs, each waited for up to a second, or megabytes of
// spec) hold one worker each; while all but one of the controller's
// workers are held, another RGD is still reconciled and refused. With a
// single worker (controller-runtime's default), fifteen hostile RGDs made
// a benign one wait fifteen seconds and more.
func TestASlowRGDDoesNotHoldUpTheOthers(t *testing.T) {
	fleet := fgtesting.StartFleet(t, 0)
	ctx := context.Background()
	mgr, err := manager.New(fleet.Hub.Config, manager.Options{
		Scheme:                 fgtesting.NewScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	crd, err := v1alpha1.CRD()
	require.NoError(t, err)
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	require.NoError(t, InstallCRD(ctx, c, crd, "test"))
	reg := hangingRegistry{started: make(chan string, DefaultRGDWorkers), release: make(chan struct{})}
	t.Cleanup(func() { close(reg.release) })
	require.NoError(t, (&RGDReconciler{Client: mgr.GetClient(), Registry: reg}).SetupWithManager(mgr))
	fgtesting.Start(t, mgr.Start)

	hung := DefaultRGDWorkers - 1
	for i := range hung {
		require.NoError(t, c.Create(ctx, colorRGD(t, fmt.Sprintf("hung-%d", i), "red")))
	}
	for i := range hung {
		select {
		case <-reg.started:
		case <-time.After(rgdWait):
			require.Failf(t, "slow RGDs are reconciled one at a time", "%d of %d slow RGDs started at once", i, hung)
		}
	}
	require.NoError(t, c.Create(ctx, colorRGD(t, "prompt", "blue")))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, c.Get(ctx, client.ObjectKey{Name: "prompt"}, rgd))
		accepted := meta.FindStatusCondition(rgd.Status.Conditions, v1alpha1.ConditionGraphAccepted)
		require.NotNil(ct, accepted)
		assert.Equal(ct, metav1.ConditionFalse, accepted.Status)
		assert.Contains(ct, accepted.Message, "refused at once")
	}, rgdWait, 100*time.Millisecond, "an RGD is refused while %d slow ones hold their workers", hung)
}
