//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

func TestInstancesAreServedSoonAfterTheirCRDComesBack(t *testing.T) {
	ctx := context.Background()
	c, g, _ := servedOnOneSpoke(t, pairRGD)
	require.NoError(t, c.Create(ctx, newInstance(g, "team", "before", map[string]any{})))
	stateIs(t, c, g, "team", "before", contract.StateActive)

	require.NoError(t, c.Delete(ctx, g.CRD.DeepCopy()))
	eventually(t, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(g.CRD), &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), fmt.Sprintf("CRD still there (%v)", err)
	})
	// The scenario, not a synchronisation: the CRD stays away long enough
	// for the instance watch's retries to back off (as they did for 16-30 s).
	time.Sleep(10 * time.Second)
	installCRD(t, c, g)

	var created time.Time
	eventually(t, func() (bool, string) { // the test client's own discovery may lag
		err := c.Create(ctx, newInstance(g, "team", "after", map[string]any{}))
		created = time.Now()
		return err == nil, fmt.Sprintf("create: %v", err)
	})
	eventuallyWithin(t, 3*time.Second, func() (bool, string) {
		u, err := getInstance(t, c, g, "team", "after")
		if err != nil {
			return false, err.Error()
		}
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		return state == contract.StateActive, fmt.Sprintf("state %q %s after the create", state, time.Since(created))
	})
}
