package placementdecision

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// MaxSlices is how many slices Read reads of one decision.
const MaxSlices = fgv1alpha1.MaxDecisionSlices

// MaxPerSlice is how many clusters one slice may list.
const MaxPerSlice = fgv1alpha1.MaxDecisionsPerSlice

// Errors Read returns (wrapped, with the decision named).
var (
	// ErrNotFound: no PlacementDecision has the name, and none carries it
	// as its decision key.
	ErrNotFound = errors.New("no PlacementDecision of that name or decision key")
	// ErrTooManySlices: the decision spans more than MaxSlices slices.
	ErrTooManySlices = errors.New("the decision spans too many slices")
	// ErrTooManyClusters: a slice lists more than MaxPerSlice clusters.
	ErrTooManyClusters = errors.New("a slice lists too many clusters")
)

// Read returns the names of the clusters the decision named name in
// namespace lists: the union of the PlacementDecision of that name and of
// every slice labelled multicluster.x-k8s.io/decision-key=name. Each
// listed ClusterProfileRef counts by its name. It reads one object and at
// most MaxSlices slices with c (a cache, for a hub, or a live client).
func Read(ctx context.Context, c client.Reader, namespace, name string) (map[string]bool, error) {
	slices := map[string]*ciav1alpha1.PlacementDecision{}
	named := &ciav1alpha1.PlacementDecision{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, named); {
	case err == nil:
		slices[named.Name] = named
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading PlacementDecision %s/%s: %w", namespace, name, err)
	}
	if len(validation.IsValidLabelValue(name)) == 0 {
		list := &ciav1alpha1.PlacementDecisionList{}
		if err := c.List(ctx, list, client.InNamespace(namespace),
			client.MatchingLabels{ciav1alpha1.DecisionKeyLabel: name}, client.Limit(MaxSlices+1)); err != nil {
			return nil, fmt.Errorf("listing PlacementDecisions of decision key %s in %s: %w", name, namespace, err)
		}
		// One more than allowed tells, from the API server and from a
		// cache alike (a cache stops at the limit and always answers
		// "continue-not-supported").
		if len(list.Items) > MaxSlices {
			return nil, fmt.Errorf("%w: decision key %s in %s has more than %d", ErrTooManySlices, name, namespace, MaxSlices)
		}
		for i := range list.Items {
			slices[list.Items[i].Name] = &list.Items[i]
		}
	}
	if len(slices) == 0 {
		return nil, fmt.Errorf("%w: %s in %s", ErrNotFound, name, namespace)
	}
	if len(slices) > MaxSlices {
		return nil, fmt.Errorf("%w: %s in %s has %d, more than %d", ErrTooManySlices, name, namespace, len(slices), MaxSlices)
	}
	return clusters(slices)
}

// clusters is the union of the clusters the slices list.
func clusters(slices map[string]*ciav1alpha1.PlacementDecision) (map[string]bool, error) {
	out := map[string]bool{}
	for _, s := range slices {
		if len(s.Decisions) > MaxPerSlice {
			return nil, fmt.Errorf("%w: %s/%s lists %d, more than %d", ErrTooManyClusters, s.Namespace, s.Name, len(s.Decisions), MaxPerSlice)
		}
		for _, d := range s.Decisions {
			if d.ClusterProfileRef.Name != "" {
				out[d.ClusterProfileRef.Name] = true
			}
		}
	}
	return out, nil
}
