//go:build integration

package rgd

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/utils/ptr"
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
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/crds"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// paintRGD is a small valid RGD of the given name.
func paintRGD(t *testing.T, name string) *v1alpha1.ResourceGraphDefinition {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(fmt.Appendf(nil, `
metadata: {name: %s}
spec:
  schema: {apiVersion: v1alpha1, kind: Paint, spec: {color: string}}
  resources:
  - id: config
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {color: '${schema.spec.color}'}}
`, name), rgd))
	return rgd
}

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
	// Once released, the hung RGDs are requeued and come back at once; a
	// send that nobody reads any more must not hold the manager's stop.
	select {
	case r.started <- rgd.Name:
	case <-r.release:
		return nil, fmt.Errorf("%w: graph %s", ErrCompiling, rgd.Name)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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
func (hangingRegistry) Status(string) hub.GraphStatus { return hub.GraphStatus{} }

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
		// The released reconciles write status on their way out; on a
		// loaded CI machine that took past the default 30 s grace.
		// fgtesting.StopTimeout (1 min) still fails a real hang.
		GracefulShutdownTimeout: ptr.To(50 * time.Second),
	})
	require.NoError(t, err)
	crd, err := v1alpha1.CRD()
	require.NoError(t, err)
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, crd))
	_, err = crds.WaitEstablished(ctx, c, crd.Name, crds.PollInterval, crds.EstablishTimeout, crds.RequestTimeout)
	require.NoError(t, err)
	reg := hangingRegistry{started: make(chan string, DefaultWorkers), release: make(chan struct{})}
	require.NoError(t, (&Reconciler{Client: mgr.GetClient(), Registry: reg}).SetupWithManager(mgr))
	fgtesting.Start(t, mgr.Start)
	// Before the manager stops (cleanups run last first): it waits for
	// the reconciles in flight.
	t.Cleanup(func() { close(reg.release) })

	hung := DefaultWorkers - 1
	for i := range hung {
		require.NoError(t, c.Create(ctx, paintRGD(t, fmt.Sprintf("hung-%d", i))))
	}
	for i := range hung {
		select {
		case <-reg.started:
		case <-time.After(rgdWait):
			require.Failf(t, "slow RGDs are reconciled one at a time", "%d of %d slow RGDs started at once", i, hung)
		}
	}
	require.NoError(t, c.Create(ctx, paintRGD(t, "prompt")))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		require.NoError(ct, c.Get(ctx, client.ObjectKey{Name: "prompt"}, rgd))
		accepted := meta.FindStatusCondition(rgd.Status.Conditions, v1alpha1.ConditionGraphAccepted)
		require.NotNil(ct, accepted)
		assert.Equal(ct, metav1.ConditionFalse, accepted.Status)
		assert.Contains(ct, accepted.Message, "refused at once")
	}, rgdWait, 100*time.Millisecond, "an RGD is refused while %d slow ones hold their workers", hung)
}
