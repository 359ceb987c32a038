package hub

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// Revisions keeps GraphRevision records on the hub cluster: every accepted
// spec of a graph becomes an immutable record numbered from 1, so that a hub
// that restarts can find, and recompile, the revision a cluster serves.
// It installs the GraphRevision CRD on first use (and refuses one it did
// not install). Safe for concurrent use.
type Revisions struct {
	client       client.Client
	fieldManager string

	mu        sync.Mutex
	installed bool
}

// NewRevisions returns a store writing with c, a client of the hub cluster
// that reads live (not from a cache).
func NewRevisions(c client.Client, fieldManager string) *Revisions {
	if fieldManager == "" {
		fieldManager = DefaultFieldManager
	}
	return &Revisions{client: c, fieldManager: fieldManager}
}

// Issue returns the revision number of rgd's spec: that of the latest
// record if it holds the same spec and opt-in, else a new record's, one
// higher.
func (r *Revisions) Issue(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (int64, error) {
	if err := r.install(ctx); err != nil {
		return 0, err
	}
	snap := fgv1alpha1.ResourceGraphDefinitionSnapshot{
		Name:                 rgd.Name,
		Generation:           rgd.Generation,
		AllowBreakingChanges: rgd.Annotations[v1alpha1.AnnotationAllowBreakingChanges] == "true",
		Spec:                 *rgd.Spec.DeepCopy(),
	}
	for range 3 { // a concurrent issuer may take the next number first
		latest, err := r.latest(ctx, rgd.Name)
		if err != nil {
			return 0, err
		}
		next := int64(1)
		if latest != nil {
			if latest.Spec.Snapshot.AllowBreakingChanges == snap.AllowBreakingChanges &&
				equality.Semantic.DeepEqual(latest.Spec.Snapshot.Spec, snap.Spec) {
				return latest.Spec.Revision, nil
			}
			next = latest.Spec.Revision + 1
		}
		err = r.create(ctx, next, snap, owner(rgd))
		if !apierrors.IsAlreadyExists(err) {
			return next, err
		}
	}
	return 0, fmt.Errorf("issuing a revision of graph %s: lost the race three times", rgd.Name)
}

// Get returns revision rev of the named graph.
func (r *Revisions) Get(ctx context.Context, graph string, rev int64) (*fgv1alpha1.GraphRevision, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRevisionKind))
	if err := r.client.Get(ctx, client.ObjectKey{Name: fgv1alpha1.RevisionName(graph, rev)}, u); err != nil {
		return nil, fmt.Errorf("reading revision %d of graph %s: %w", rev, graph, err)
	}
	return decodeRevision(u)
}

// RGD returns the ResourceGraphDefinition a revision records, its
// generation and opt-in included, ready to compile.
func RGD(rev *fgv1alpha1.GraphRevision) *v1alpha1.ResourceGraphDefinition {
	rgd := &v1alpha1.ResourceGraphDefinition{Spec: *rev.Spec.Snapshot.Spec.DeepCopy()}
	rgd.Name, rgd.Generation = rev.Spec.Snapshot.Name, rev.Spec.Snapshot.Generation
	if rev.Spec.Snapshot.AllowBreakingChanges {
		rgd.Annotations = map[string]string{v1alpha1.AnnotationAllowBreakingChanges: "true"}
	}
	return rgd
}

func (r *Revisions) latest(ctx context.Context, graph string) (*fgv1alpha1.GraphRevision, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRevisionKind + "List"))
	if err := r.client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing revisions of graph %s: %w", graph, err)
	}
	var latest *fgv1alpha1.GraphRevision
	for i := range list.Items {
		rev, err := decodeRevision(&list.Items[i])
		if err != nil {
			return nil, err
		}
		if rev.Spec.Snapshot.Name == graph && (latest == nil || rev.Spec.Revision > latest.Spec.Revision) {
			latest = rev
		}
	}
	return latest, nil
}

// owner makes an RGD object the owner of its revisions, so that the hub's
// garbage collector removes them with it; Go graphs (no UID) own none.
func owner(rgd *v1alpha1.ResourceGraphDefinition) []metav1.OwnerReference {
	if rgd.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "ResourceGraphDefinition",
		Name: rgd.Name, UID: rgd.UID,
	}}
}

func (r *Revisions) create(ctx context.Context, rev int64, snap fgv1alpha1.ResourceGraphDefinitionSnapshot, owners []metav1.OwnerReference) error {
	gr := &fgv1alpha1.GraphRevision{Spec: fgv1alpha1.GraphRevisionSpec{Revision: rev, Snapshot: snap}}
	gr.OwnerReferences = owners
	gr.APIVersion, gr.Kind = fgv1alpha1.GroupVersion.String(), fgv1alpha1.GraphRevisionKind
	gr.Name = fgv1alpha1.RevisionName(snap.Name, rev)
	gr.Labels = map[string]string{fgv1alpha1.LabelGraphRevision: strconv.FormatInt(rev, 10)}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gr)
	if err != nil {
		return fmt.Errorf("encoding revision %s: %w", gr.Name, err)
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := r.client.Create(ctx, u, client.FieldOwner(r.fieldManager)); err != nil {
		return fmt.Errorf("recording revision %s: %w", gr.Name, err)
	}
	return nil
}

func decodeRevision(u *unstructured.Unstructured) (*fgv1alpha1.GraphRevision, error) {
	gr := &fgv1alpha1.GraphRevision{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, gr); err != nil {
		return nil, fmt.Errorf("decoding revision %s: %w", u.GetName(), err)
	}
	return gr, nil
}

// install puts the GraphRevision CRD on the hub once, refusing one that
// fleetgraph does not own.
func (r *Revisions) install(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.installed {
		return nil
	}
	if err := InstallCRD(ctx, r.client, fgv1alpha1.GraphRevisionCRD(), r.fieldManager); err != nil {
		return err
	}
	r.installed = true
	return nil
}

// ServedRevision reads the revision number a spoke's CRD of g was applied
// from (0 if unknown or absent).
func ServedRevision(ctx context.Context, r client.Reader, crdName string) (int64, error) {
	crd, err := getCRD(ctx, r, crdName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, err
	}
	rev, err := strconv.ParseInt(crd.Labels[fgv1alpha1.LabelGraphRevision], 10, 64)
	if err != nil {
		return 0, nil //nolint:nilerr // no usable label: unknown
	}
	return rev, nil
}
