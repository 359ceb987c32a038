// Package hold edits the holds of a GraphRollout (spec.holds): the pins
// that keep clusters on the revision each serves while the rollout goes on
// elsewhere. It is the one implementation of those edits: sdk.Hub.Hold and
// Hub.Release, and the fleetgraph command's rollout hold and release, all
// call it, so a hold made from Go, from the command line or by a
// platform's own tooling is the same write, checked the same way.
//
// The edits are pure functions of the GraphRollout read (Clusters,
// Selector, Release, ReleaseSelector); Edit reads, edits and patches in a
// loop that retries on conflict. A cluster is known to a rollout when its
// status lists it (status.clusters: every cluster the hub places the graph
// on, as of its last look): holding a cluster the rollout does not place
// is refused, since the hold could pin nothing.
//
// It does no I/O but through the client given to Edit, and imports no
// other package of this module than the API types.
package hold

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// FieldManager is the field manager Edit writes spec.holds as: Hub.Hold
// and Hub.Release, and the fleetgraph command's rollout hold and release.
const FieldManager = "fleetgraph-hold"

// Errors the edits return; match them with errors.Is.
var (
	// ErrNotHeld: no hold of the rollout takes the cluster (or the
	// selector).
	ErrNotHeld = errors.New("no hold of the rollout takes the cluster")
	// ErrHeldBySelector: a hold takes the cluster by its labels, which
	// releasing by name cannot change; edit or remove that hold.
	ErrHeldBySelector = errors.New("a hold takes the cluster by label selector")
	// ErrUnknownCluster: the rollout does not place the cluster (its
	// status.clusters does not list it), so a hold of it would pin
	// nothing.
	ErrUnknownCluster = errors.New("the rollout places no such cluster")
)

// maxNamed is how many placed clusters an ErrUnknownCluster message names.
const maxNamed = 10

// Clusters returns ro's holds with one more hold naming those of clusters
// that no hold names yet, with reason, and whether that changed anything
// (false when every one is named already). Each cluster must be placed by
// the rollout (listed in ro.Status.Clusters), else it fails with
// ErrUnknownCluster, naming every such cluster, and changes nothing. ro is
// not written to.
func Clusters(ro *fgv1alpha1.GraphRollout, clusters []string, reason string) ([]fgv1alpha1.Hold, bool, error) {
	if err := placed(ro, clusters); err != nil {
		return nil, false, err
	}
	var add []string
	for _, name := range clusters {
		if !slices.Contains(add, name) && !named(ro.Spec.Holds, name) {
			add = append(add, name)
		}
	}
	if len(add) == 0 {
		return ro.Spec.Holds, false, nil
	}
	return append(slices.Clone(ro.Spec.Holds), fgv1alpha1.Hold{Clusters: add, Reason: reason}), true, nil
}

// Selector returns ro's holds with one more hold taking the placed
// clusters sel selects, with reason, and whether that changed anything
// (false when a hold of an equal selector exists). ro is not written to.
func Selector(ro *fgv1alpha1.GraphRollout, sel *metav1.LabelSelector, reason string) ([]fgv1alpha1.Hold, bool) {
	for _, h := range ro.Spec.Holds {
		if h.ClusterSelector != nil && apiequality.Semantic.DeepEqual(h.ClusterSelector, sel) {
			return ro.Spec.Holds, false
		}
	}
	return append(slices.Clone(ro.Spec.Holds), fgv1alpha1.Hold{ClusterSelector: sel, Reason: reason}), true
}

// Release returns ro's holds with each of clusters taken out of every
// hold that names it; a hold left naming none goes. A cluster a hold
// names is released even when the rollout places it no more. Any other
// cluster fails the whole release, naming the cluster and the rollout:
// with ErrHeldBySelector when bySelector says a selector holds it, with
// ErrUnknownCluster when the rollout does not place it, else with
// ErrNotHeld. ro is not written to.
func Release(ro *fgv1alpha1.GraphRollout, clusters []string, bySelector func(cluster string) bool) ([]fgv1alpha1.Hold, error) {
	var errs []error
	for _, name := range clusters {
		switch {
		case named(ro.Spec.Holds, name):
		case bySelector(name):
			errs = append(errs, fmt.Errorf("cluster %q in GraphRollout %s: %w", name, ro.Name, ErrHeldBySelector))
		case !listed(ro, name):
			errs = append(errs, unknown(ro, []string{name}))
		default:
			errs = append(errs, fmt.Errorf("cluster %q in GraphRollout %s: %w", name, ro.Name, ErrNotHeld))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]fgv1alpha1.Hold, 0, len(ro.Spec.Holds))
	for _, h := range ro.Spec.Holds {
		if h.ClusterSelector == nil {
			h.Clusters = slices.DeleteFunc(slices.Clone(h.Clusters), func(n string) bool { return slices.Contains(clusters, n) })
			if len(h.Clusters) == 0 {
				continue
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// ReleaseSelector returns ro's holds without those whose selector equals
// sel; ErrNotHeld, naming the selector and the rollout, when none does.
// ro is not written to.
func ReleaseSelector(ro *fgv1alpha1.GraphRollout, sel *metav1.LabelSelector) ([]fgv1alpha1.Hold, error) {
	out := make([]fgv1alpha1.Hold, 0, len(ro.Spec.Holds))
	for _, h := range ro.Spec.Holds {
		if h.ClusterSelector == nil || !apiequality.Semantic.DeepEqual(h.ClusterSelector, sel) {
			out = append(out, h)
		}
	}
	if len(out) == len(ro.Spec.Holds) {
		return nil, fmt.Errorf("selector %q in GraphRollout %s: %w", metav1.FormatLabelSelector(sel), ro.Name, ErrNotHeld)
	}
	return out, nil
}

// Edit replaces the spec.holds of the GraphRollout find reads with what
// edit returns, unless edit fails or says nothing changed. The patch is
// made as FieldManager, on the precondition that the GraphRollout has not
// changed since it was read; on a conflict Edit reads it again and calls
// edit again, so edit must decide from the GraphRollout it is given.
func Edit(ctx context.Context, c client.Client, find func(context.Context) (*fgv1alpha1.GraphRollout, error),
	edit func(*fgv1alpha1.GraphRollout) (holds []fgv1alpha1.Hold, changed bool, err error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ro, err := find(ctx)
		if err != nil {
			return err
		}
		holds, changed, err := edit(ro)
		if err != nil || !changed {
			return err
		}
		value := any(holds)
		if len(holds) == 0 {
			value = nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": ro.ResourceVersion},
			"spec":     map[string]any{"holds": value},
		})
		if err != nil {
			return fmt.Errorf("editing the holds of GraphRollout %s: %w", ro.Name, err)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
		u.SetName(ro.Name)
		if err := c.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
			return fmt.Errorf("editing the holds of GraphRollout %s: %w", ro.Name, err)
		}
		return nil
	})
}

// named reports whether a hold of holds names the cluster.
func named(holds []fgv1alpha1.Hold, cluster string) bool {
	for _, h := range holds {
		if slices.Contains(h.Clusters, cluster) {
			return true
		}
	}
	return false
}

// listed reports whether ro's status lists the cluster as placed.
func listed(ro *fgv1alpha1.GraphRollout, cluster string) bool {
	return slices.ContainsFunc(ro.Status.Clusters, func(c fgv1alpha1.RolloutCluster) bool { return c.Name == cluster })
}

// placed fails with ErrUnknownCluster when a cluster is not listed.
func placed(ro *fgv1alpha1.GraphRollout, clusters []string) error {
	var missing []string
	for _, name := range clusters {
		if !listed(ro, name) && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return unknown(ro, missing)
}

// unknown is ErrUnknownCluster for the missing clusters, naming what the
// rollout does place.
func unknown(ro *fgv1alpha1.GraphRollout, missing []string) error {
	quoted := make([]string, len(missing))
	for i, m := range missing {
		quoted[i] = fmt.Sprintf("%q", m)
	}
	what := "cluster " + quoted[0]
	if len(quoted) > 1 {
		what = "clusters " + strings.Join(quoted, ", ")
	}
	return fmt.Errorf("%s in GraphRollout %s: %w (%s)", what, ro.Name, ErrUnknownCluster, placedList(ro))
}

// placedList says which clusters ro places, at most maxNamed of them.
func placedList(ro *fgv1alpha1.GraphRollout) string {
	if len(ro.Status.Clusters) == 0 {
		return "its status lists no cluster yet"
	}
	names := make([]string, 0, min(len(ro.Status.Clusters), maxNamed))
	for _, c := range ro.Status.Clusters[:min(len(ro.Status.Clusters), maxNamed)] {
		names = append(names, c.Name)
	}
	s := "it places " + strings.Join(names, ", ")
	if more := len(ro.Status.Clusters) - len(names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}
