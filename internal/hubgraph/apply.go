package hubgraph

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// ErrNotOwned is wrapped by the error of a child that exists and is not
// this instance's: it is neither written nor deleted.
var ErrNotOwned = errors.New("object exists and is not ours")

// deletingError: the child is being deleted; it is written once gone.
type deletingError struct{ object string }

func (e *deletingError) Error() string {
	return fmt.Sprintf("%s is being deleted; waiting for it to go before writing it again", e.object)
}

func keyOf(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// applier writes one instance's rendered children into their clusters,
// confined (confine.go) and claimed: what exists under a child's name is
// written only when it is this instance's. It holds no state of its own
// beyond what it is made with, and needs no lock.
type applier struct {
	rt      *Runtime
	g       *graph.Graph
	owner   *owner
	watches *watchSet
	// memory saves the applies that would change nothing
	// (apply_memory.go); it is the watches' too.
	memory *applyMemory
	// reads holds the nodes whose answers the graph reads
	// (graph.Graph.Reads): those are applied every time.
	reads map[string]bool
}

func newApplier(rt *Runtime, g *graph.Graph, ow *owner, w *watchSet) *applier {
	reads := map[string]bool{}
	for _, n := range g.Nodes {
		reads[n.ID] = g.Reads(n.ID)
	}
	return &applier{rt: rt, g: g, owner: ow, watches: w, memory: w.memory, reads: reads}
}

// apply writes one rendered child of inst into the named cluster, after
// checking that what has its name (if anything) is this instance's, and
// returns the API server's answer. A child whose answer nothing reads, and
// whose desired form has not changed since our last apply that still
// stands, is not sent again: the desired form is returned.
func (a *applier) apply(ctx context.Context, inst *unstructured.Unstructured, n *graph.Node, name string, cl cluster.Cluster, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	namespaced, err := namespaced(cl, n.GVK)
	if err != nil {
		return nil, err
	}
	switch {
	case !namespaced:
		u.SetNamespace("")
	case u.GetNamespace() == "":
		u.SetNamespace(defaultNamespace(inst))
	}
	if err := a.confined(inst, n.GVK, u.GetNamespace(), u.GetName(), namespaced); err != nil {
		return nil, err // confine.go
	}
	u.SetLabels(a.owner.labels(inst, n, u.GetLabels()))
	var hash uint64 // 0: applied every time
	if !a.reads[n.ID] {
		if hash, err = hashOf(u); err != nil {
			return nil, err
		}
	}
	cctx, cancel := a.rt.callCtx(ctx)
	defer cancel()
	if err := a.watches.ensure(cctx, name, cl, n.GVK); err != nil {
		return nil, fmt.Errorf("watching %s: %w", n.GVK.Kind, err)
	}
	if err := a.claim(cctx, inst, cl, u); err != nil {
		return nil, err
	}
	key, owner := childOf(name, n.GVK, u), keyOf(inst.GetNamespace(), inst.GetName())
	if hash != 0 && a.memory.unchanged(key, cl, hash) {
		return u, nil
	}
	a.memory.begin(key, cl, owner)
	err = cl.GetClient().Apply(cctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(a.rt.opts.Instances.FieldManager), client.ForceOwnership)
	if a.memory.end(key, hash, u, err) {
		a.watches.enqueue(owner) // somebody else wrote it as we did
	}
	if err != nil {
		return nil, err
	}
	u.SetManagedFields(nil)
	return u, nil
}

// claim checks, in the cluster's metadata cache, that u's object does not
// exist or is inst's; one being deleted is waited for.
func (a *applier) claim(ctx context.Context, inst *unstructured.Unstructured, cl cluster.Cluster, u *unstructured.Unstructured) error {
	existing := &metav1.PartialObjectMetadata{}
	existing.SetGroupVersionKind(u.GroupVersionKind())
	err := cl.GetCache().Get(ctx, keyOf(u.GetNamespace(), u.GetName()), existing)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	object := fmt.Sprintf("%s %s", u.GetKind(), keyOf(u.GetNamespace(), u.GetName()))
	if !a.owner.ours(inst, existing.Labels) {
		owner := "nobody we know of"
		if uid := existing.Labels[contract.LabelInstanceUID]; uid != "" {
			owner = fmt.Sprintf("instance %s/%s (uid %s) of hub %q", existing.Labels[contract.LabelInstanceNamespace],
				existing.Labels[contract.LabelInstanceName], uid, existing.Labels[LabelHub])
		}
		return fmt.Errorf("%s already exists and belongs to %s; it is not taken over: %w", object, owner, ErrNotOwned)
	}
	if existing.DeletionTimestamp != nil {
		return &deletingError{object: object}
	}
	return nil
}
