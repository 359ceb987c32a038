package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/crdcompat"
	"github.com/fleetgraph/fleetgraph/internal/crds"
	"github.com/fleetgraph/fleetgraph/internal/steps"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// ensure is one attempt's whole work on one cluster. It returns the
// version of the CRD it saw established, and errors that name no cluster
// (the caller names it, clusterError), since clusters of one server share
// them. Every request it sends is bounded by RequestTimeout.
func (f *FanOut) ensure(ctx context.Context, c Cluster, g Graph) (establishedCRD, error) {
	clusterName, cl := c.Name, c.Cluster
	clock := steps.Start(ctx, g.Name, clusterName)
	ticket := f.admission.fence.begin() // admission_fence.go
	existed, bound, err := f.precheck(ctx, clusterName, cl, g)
	if err != nil {
		return establishedCRD{}, err
	}
	clock.Lap(steps.Checks)
	if !existed && bound {
		if err := f.admission.retract(ctx, cl, g); err != nil {
			return establishedCRD{}, err
		}
	}
	clock.Lap(steps.Retract)
	if err := f.apply(ctx, cl, g); err != nil {
		return establishedCRD{}, err
	}
	clock.Lap(steps.Apply)
	f.tracker.recordVersion(ctx, g.Name, clusterName, g.Generation, g.Revision, CRDApplied, "")
	crd, err := crds.WaitEstablished(ctx, cl.GetAPIReader(), g.CRD.Name, pollInterval, f.opts.EstablishTimeout, f.opts.RequestTimeout)
	if err != nil {
		return establishedCRD{}, err
	}
	clock.Lap(steps.Established)
	if g.Admission != nil {
		f.admission.activateLater(ctx, c, g, ticket) // admission_activate.go
	}
	return establishedCRD{uid: crd.UID, generation: crd.Generation}, nil
}

// precheck asks cl, all at once, whether it serves every kind g needs,
// whether g's Check passes there, which CRD of g's name it holds and
// whether g's admission policy is bound. They are independent reads, so a
// new graph waits for the slowest, not for their sum. It returns the first
// refusal in that order, whether the CRD exists, and whether a binding may
// need retracting before the CRD is created (true when the read failed:
// retracting is then the safe way).
func (f *FanOut) precheck(ctx context.Context, clusterName string, cl cluster.Cluster, g Graph) (existed, bound bool, err error) {
	var kindsErr, checkErr error
	var wg sync.WaitGroup
	if g.Admission != nil {
		wg.Go(func() {
			var err error
			bound, err = f.admission.bound(ctx, cl, g)
			bound = bound || (err != nil && !meta.IsNoMatchError(err))
		})
	}
	wg.Go(func() {
		clock := steps.Start(ctx, g.Name, clusterName)
		kindsErr = f.servesKinds(ctx, cl, g.Kinds)
		clock.Lap(steps.Kinds)
	})
	if g.Check != nil {
		wg.Go(func() {
			clock := steps.Start(ctx, g.Name, clusterName)
			if err := g.Check(ctx, cl); err != nil {
				checkErr = &checkFailure{err: err}
			}
			clock.Lap(steps.Schemas)
		})
	}
	clock := steps.Start(ctx, g.Name, clusterName)
	existed, readErr := f.checkExisting(ctx, cl, g)
	clock.Lap(steps.Read)
	wg.Wait()
	return existed, bound, cmp.Or(kindsErr, checkErr, readErr)
}

// errBeingDeleted: the CRD is being deleted on the cluster; it is applied
// again once it is gone.
var errBeingDeleted = errors.New("CRD is being deleted from the cluster; it is applied again once it is gone")

// checkFailure is the error of a Graph's Check, which names no cluster:
// clusterError names it.
type checkFailure struct{ err error }

func (e *checkFailure) Error() string { return e.err.Error() }
func (e *checkFailure) Unwrap() error { return e.err }

// checkExisting refuses a CRD we do not own and a breaking change to ours.
// It reports whether the CRD exists already.
func (f *FanOut) checkExisting(ctx context.Context, cl cluster.Cluster, g Graph) (bool, error) {
	reqCtx, cancel := f.request(ctx)
	existing, err := crds.Get(reqCtx, cl.GetAPIReader(), g.CRD.Name)
	cancel()
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading CRD %s: %w", g.CRD.Name, err)
	case existing.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByFleetgraph:
		return true, fmt.Errorf("%w: %s (label %s=%q)", ErrConflict, g.CRD.Name,
			v1alpha1.LabelManagedBy, existing.Labels[v1alpha1.LabelManagedBy])
	case existing.DeletionTimestamp != nil:
		// Applying it would not stop the deletion, and it would go
		// established: wait until it is gone, then create it anew.
		return true, fmt.Errorf("%w: %s", errBeingDeleted, g.CRD.Name)
	case g.AllowBreaking:
		return true, nil
	}
	return true, breaking(existing, g.CRD)
}

// breaking refuses replacing old with new when that could break what is
// stored or written against old, saying how to allow it.
func breaking(old, new *apiextensionsv1.CustomResourceDefinition) error {
	breaks := crdcompat.Breaks(old, new)
	if len(breaks) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s (annotate the RGD %s=true or %s=true to allow)", ErrIncompatible, crdcompat.Message(breaks),
		v1alpha1.AnnotationKroAllowBreakingChanges, v1alpha1.AnnotationAllowBreakingChanges)
}

// apply applies g's CRD, labelled with the revision it comes from, so that
// a hub that restarts knows which revision the cluster serves.
func (f *FanOut) apply(ctx context.Context, cl cluster.Cluster, g Graph) error {
	u, err := crds.ApplyObject(g.CRD)
	if err != nil {
		return err
	}
	if rev := revisionLabel(g.Revision); rev != "" {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[fgv1alpha1.LabelGraphRevision] = rev
		u.SetLabels(labels)
	}
	reqCtx, cancel := f.request(ctx)
	defer cancel()
	err = cl.GetClient().Apply(reqCtx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(f.opts.FieldManager), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("applying CRD %s: %w", g.CRD.Name, err)
	}
	return nil
}

// revisionLabel is the revision label apply puts on a CRD ("" for an
// unnumbered graph).
func revisionLabel(revision int64) string {
	if revision > 0 {
		return strconv.FormatInt(revision, 10)
	}
	return ""
}

// servesKinds asks cl's discovery, live, whether it serves every one of
// kinds; a CRD installed a moment ago counts. ctx bounds each request.
func (f *FanOut) servesKinds(ctx context.Context, cl cluster.Cluster, kinds []schema.GroupVersionKind) error {
	byGV := map[schema.GroupVersion][]string{}
	for _, k := range kinds {
		byGV[k.GroupVersion()] = append(byGV[k.GroupVersion()], k.Kind)
	}
	var missing []string
	for gv, kinds := range byGV {
		reqCtx, cancel := f.request(ctx)
		served, err := servedKinds(reqCtx, cl, gv)
		cancel()
		if err != nil {
			return err
		}
		for _, k := range kinds {
			if !served[k] {
				missing = append(missing, gv.WithKind(k).String())
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		missing = compactSorted(missing)
		return fmt.Errorf("%w: kinds not served: %s", ErrIncompatible, strings.Join(missing, ", "))
	}
	return nil
}

// compactSorted drops repeats from a sorted list.
func compactSorted(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
