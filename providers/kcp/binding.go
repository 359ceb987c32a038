package kcp

import (
	"context"
	"fmt"
	"strings"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/hub"
)

// ErrClaimsNotAccepted: the consumer's APIBinding does not accept a
// permission claim the graph needs to write its children there. It wraps
// hub.ErrIncompatible, so the cluster is reported Incompatible.
var ErrClaimsNotAccepted = fmt.Errorf("%w: the APIBinding does not accept the export's permission claims", hub.ErrIncompatible)

// serves checks, through a consumer's view of the virtual workspace, that
// the consumer's APIBinding to the export accepts the claims pub needs
// (else ErrClaimsNotAccepted) and is bound to the published schema (else
// hub.ErrNotServedYet).
func (e *exporter) serves(ctx context.Context, r client.Reader, pub publication) error {
	binding, err := bindingOf(ctx, r, e.name)
	if err != nil {
		return err
	}
	if err := acceptsClaims(binding, pub.Claims); err != nil {
		return err
	}
	return boundTo(binding, pub)
}

// bindingOf finds the consumer's APIBinding to the export called name.
func bindingOf(ctx context.Context, r client.Reader, name string) (*apisv1alpha1.APIBinding, error) {
	list := &apisv1alpha1.APIBindingList{}
	if err := r.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing APIBindings: %w", err)
	}
	for i := range list.Items {
		b := &list.Items[i]
		if ref := b.Spec.Reference.Export; ref != nil && ref.Name == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w through the virtual workspace: no APIBinding to APIExport %s", hub.ErrNotServedYet, name)
}

func acceptsClaims(b *apisv1alpha1.APIBinding, claims []schema.GroupResource) error {
	accepted := map[schema.GroupResource]bool{}
	for _, c := range b.Spec.PermissionClaims {
		if c.State == apisv1alpha1.ClaimAccepted {
			accepted[schema.GroupResource{Group: c.Group, Resource: c.Resource}] = true
		}
	}
	var missing []string
	for _, gr := range claims {
		if !accepted[gr] {
			missing = append(missing, claimName(gr))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: APIBinding %s does not accept %s", ErrClaimsNotAccepted, b.Name, strings.Join(missing, ", "))
	}
	return nil
}

func claimName(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource + " (core)"
	}
	return gr.String()
}

func boundTo(b *apisv1alpha1.APIBinding, pub publication) error {
	for _, r := range b.Status.BoundResources {
		if r.Group == pub.Resource.Group && r.Resource == pub.Resource.Resource {
			if r.Schema.Name == pub.Schema {
				return nil
			}
			return fmt.Errorf("%w through the virtual workspace: APIBinding %s serves %s as %s, not %s yet", hub.ErrNotServedYet, b.Name, pub.Resource, r.Schema.Name, pub.Schema)
		}
	}
	return fmt.Errorf("%w through the virtual workspace: APIBinding %s does not bind %s yet", hub.ErrNotServedYet, b.Name, pub.Resource)
}
