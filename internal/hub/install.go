package hub

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// InstallCRD applies one of fleetgraph's own hub CRDs with c, a live client
// of the hub, and waits until it is established. A CRD of that name that
// fleetgraph did not install is refused with ErrConflict.
func InstallCRD(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, fieldManager string) error {
	existing, err := getCRD(ctx, c, crd.Name)
	switch {
	case err == nil && existing.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByFleetgraph:
		return fmt.Errorf("%w: %s", ErrConflict, crd.Name)
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
	return WaitEstablished(ctx, c, crd.Name)
}
