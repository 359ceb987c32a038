package crds

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// ErrNotOurs: a CRD of that name exists on the hub and fleetgraph did not
// install it. It is never overwritten.
var ErrNotOurs = errors.New("CRD exists and is not managed by fleetgraph")

// Install applies one of fleetgraph's own hub CRDs with c, a live client
// of the hub, and waits until it is established and c can use it (the
// API server's discovery lags Established by a few seconds, and two of our
// kinds share a group). A CRD of that name that fleetgraph did not install
// is refused with ErrNotOurs.
func Install(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, fieldManager string) error {
	existing, err := Get(ctx, c, crd.Name)
	switch {
	case err == nil && existing.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByFleetgraph:
		return fmt.Errorf("%w: %s", ErrNotOurs, crd.Name)
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading CRD %s: %w", crd.Name, err)
	}
	u, err := ApplyObject(crd)
	if err != nil {
		return err
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
	}
	if _, err := WaitEstablished(ctx, c, crd.Name, PollInterval, EstablishTimeout, RequestTimeout); err != nil {
		return err
	}
	return waitDiscovered(ctx, c, crd)
}

// waitDiscovered waits until c can list crd's kind.
func waitDiscovered(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{
		Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Kind: crd.Spec.Names.ListKind,
	})
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, EstablishTimeout, true, func(ctx context.Context) (bool, error) {
		last = c.List(ctx, list, client.Limit(1))
		return !meta.IsNoMatchError(last), nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s established but not served: %w: %w", crd.Name, last, err)
	}
	return last
}
