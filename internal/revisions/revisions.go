package revisions

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/crds"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// Store keeps GraphRevision records on the hub cluster: every accepted
// spec of a graph becomes an immutable record numbered from 1, so that a hub
// that restarts can find, and recompile, the revision a cluster serves.
// It installs the GraphRevision CRD on first use (and refuses one it did
// not install). Safe for concurrent use.
//
// Issuing is on the path of every new graph, so it costs one write in the
// common cases: the store remembers the latest revision it issued or saw
// per graph (its number and a hash of its spec), and creates the next
// record directly. Only when the number is taken (another replica, or a
// record from before a restart) does it list the graph's records to learn
// the latest.
type Store struct {
	client       client.Client
	fieldManager string

	mu        sync.Mutex
	installed bool
	known     map[string]knownRevision // by graph name
}

// knownRevision is the latest revision of a graph this store issued or
// read.
type knownRevision struct {
	number int64
	spec   [sha256.Size]byte // specHash of its snapshot
}

// New returns a store writing with c, a client of the hub cluster
// that reads live (not from a cache).
func New(c client.Client, fieldManager string) *Store {
	if fieldManager == "" {
		fieldManager = hub.DefaultFieldManager
	}
	return &Store{client: c, fieldManager: fieldManager, known: map[string]knownRevision{}}
}

// Issue returns the revision number of rgd's spec: that of the latest
// record if it holds the same spec and opt-in, else a new record's, one
// higher.
func (r *Store) Issue(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (int64, error) {
	if err := r.install(ctx); err != nil {
		return 0, err
	}
	snap := fgv1alpha1.ResourceGraphDefinitionSnapshot{
		Name:                 rgd.Name,
		Generation:           rgd.Generation,
		AllowBreakingChanges: rgd.Annotations[v1alpha1.AnnotationAllowBreakingChanges] == "true",
		Spec:                 *rgd.Spec.DeepCopy(),
	}
	hash, err := specHash(snap)
	if err != nil {
		return 0, err
	}
	next, err := r.guess(ctx, rgd.Name, hash)
	if err != nil || next < 0 {
		return -next, err // the latest record holds this spec
	}
	for range 3 { // a concurrent issuer may take the next number first
		err := r.create(ctx, next, snap, owner(rgd))
		if err == nil {
			r.remember(rgd.Name, knownRevision{number: next, spec: hash})
			return next, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return 0, err
		}
		latest, err := r.latest(ctx, rgd.Name)
		if err != nil {
			return 0, err
		}
		next = 1
		if latest != nil {
			h, err := specHash(latest.Spec.Snapshot)
			if err != nil {
				return 0, err
			}
			r.remember(rgd.Name, knownRevision{number: latest.Spec.Revision, spec: h})
			if h == hash {
				return latest.Spec.Revision, nil
			}
			next = latest.Spec.Revision + 1
		}
	}
	return 0, fmt.Errorf("issuing a revision of graph %s: lost the race three times", rgd.Name)
}

// guess returns the number to create for a spec of that hash: one after
// the latest known record (1 for a graph never seen), or, negated, the
// latest's own number when it holds the same spec and no later record
// exists.
func (r *Store) guess(ctx context.Context, graph string, hash [sha256.Size]byte) (int64, error) {
	r.mu.Lock()
	k, ok := r.known[graph]
	r.mu.Unlock()
	if !ok {
		return 1, nil
	}
	if k.spec != hash {
		return k.number + 1, nil
	}
	// The same spec as the latest this store knows: confirm that no
	// replica issued another since.
	u := &metav1.PartialObjectMetadata{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRevisionKind))
	err := r.client.Get(ctx, client.ObjectKey{Name: fgv1alpha1.RevisionName(graph, k.number+1)}, u)
	switch {
	case apierrors.IsNotFound(err):
		return -k.number, nil
	case err != nil:
		return 0, fmt.Errorf("reading revision %d of graph %s: %w", k.number+1, graph, err)
	}
	return k.number + 2, nil // taken: create fails and the records are listed
}

func (r *Store) remember(graph string, k knownRevision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.known[graph]; !ok || k.number >= cur.number {
		r.known[graph] = k
	}
}

// Forget drops what the store remembers of the named graph (it was
// removed).
func (r *Store) Forget(graph string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.known, graph)
}

// specHash identifies a snapshot's spec and opt-in, what makes two
// revisions the same.
func specHash(snap fgv1alpha1.ResourceGraphDefinitionSnapshot) ([sha256.Size]byte, error) {
	data, err := json.Marshal(struct {
		AllowBreakingChanges bool                                 `json:"allowBreakingChanges"`
		Spec                 v1alpha1.ResourceGraphDefinitionSpec `json:"spec"`
	}{snap.AllowBreakingChanges, snap.Spec})
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("encoding the spec of graph %s: %w", snap.Name, err)
	}
	return sha256.Sum256(data), nil
}

// Get returns revision rev of the named graph.
func (r *Store) Get(ctx context.Context, graph string, rev int64) (*fgv1alpha1.GraphRevision, error) {
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

// latest reads the graph's latest record: among those labelled with its
// name, or among all records when none is (records from before the label).
func (r *Store) latest(ctx context.Context, graph string) (*fgv1alpha1.GraphRevision, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRevisionKind + "List"))
	if len(validation.IsValidLabelValue(graph)) == 0 {
		if err := r.client.List(ctx, list, client.MatchingLabels{fgv1alpha1.LabelGraphName: graph}); err != nil {
			return nil, fmt.Errorf("listing revisions of graph %s: %w", graph, err)
		}
	}
	if len(list.Items) == 0 {
		if err := r.client.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing revisions of graph %s: %w", graph, err)
		}
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

func (r *Store) create(ctx context.Context, rev int64, snap fgv1alpha1.ResourceGraphDefinitionSnapshot, owners []metav1.OwnerReference) error {
	gr := &fgv1alpha1.GraphRevision{Spec: fgv1alpha1.GraphRevisionSpec{Revision: rev, Snapshot: snap}}
	gr.OwnerReferences = owners
	gr.APIVersion, gr.Kind = fgv1alpha1.GroupVersion.String(), fgv1alpha1.GraphRevisionKind
	gr.Name = fgv1alpha1.RevisionName(snap.Name, rev)
	gr.Labels = map[string]string{fgv1alpha1.LabelGraphRevision: strconv.FormatInt(rev, 10)}
	if len(validation.IsValidLabelValue(snap.Name)) == 0 {
		gr.Labels[fgv1alpha1.LabelGraphName] = snap.Name
	}
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

// Install puts the GraphRevision CRD on the hub, once, refusing one that
// fleetgraph does not own. Issue calls it; a hub calls it as it starts,
// so that its first graph does not wait for the CRD to be established.
func (r *Store) Install(ctx context.Context) error { return r.install(ctx) }

// install puts the GraphRevision CRD on the hub once, refusing one that
// fleetgraph does not own.
func (r *Store) install(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.installed {
		return nil
	}
	if err := crds.Install(ctx, r.client, fgv1alpha1.GraphRevisionCRD(), r.fieldManager); err != nil {
		return err
	}
	r.installed = true
	return nil
}

// ServedRevision reads the revision number a spoke's CRD of g was applied
// from (0 if unknown or absent).
func ServedRevision(ctx context.Context, r client.Reader, crdName string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, hub.DefaultRequestTimeout) // a spoke's answer
	defer cancel()
	crd, err := crds.Get(ctx, r, crdName)
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
