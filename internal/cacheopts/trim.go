package cacheopts

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Of what the hub holds per spoke, most is what the runtime never reads:
// the field sets of managedFields (which fields each manager owns; the
// runtime reads only the managers' names of children, to say who wrote an
// object it will not take over, and nothing of an instance's), kubectl's
// last-applied annotation, and one copy per object of strings every object
// repeats (map and label keys, kinds, condition types). The caches belong
// to the clusters the provider creates, so trimming them is the embedder's
// (or provider's) choice: TrimCache is the cluster.Option that does it.

// lastApplied is kubectl's copy of the whole object as last applied.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TrimManagedFields is a cache transform that keeps each managedFields
// entry's manager, operation, API version, subresource and time, and drops
// its field set. Objects that are not metav1.Objects pass unchanged.
func TrimManagedFields(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	mf := o.GetManagedFields()
	if len(mf) == 0 {
		return obj, nil
	}
	for i := range mf {
		mf[i].FieldsV1 = nil
	}
	o.SetManagedFields(mf)
	return obj, nil
}

// TrimObject is the cache transform TrimCache installs. Full objects
// (unstructured, as the runtime caches instances) lose managedFields and
// the last-applied annotation, and share their map keys, repeated values
// and like list items (conditions) with other objects (intern.go).
// Metadata-only objects (as it caches children) keep of managedFields the
// managers' names only, lose the last-applied annotation and share label
// keys and the values of our labels that repeat. Other objects get
// TrimManagedFields. The cache's objects are read-only, as client-go
// requires: what they share must never be changed in place.
func TrimObject(obj any) (any, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		trimUnstructured(o)
		return o, nil
	case *metav1.PartialObjectMetadata:
		trimMeta(&o.ObjectMeta)
		return o, nil
	default:
		return TrimManagedFields(obj)
	}
}

func trimUnstructured(u *unstructured.Unstructured) {
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, lastApplied)
		}
	}
	u.Object = internJSON(u.Object, "").(map[string]any)
}

func trimMeta(o *metav1.ObjectMeta) {
	o.ManagedFields = managersOnly(o.ManagedFields)
	delete(o.Annotations, lastApplied)
	o.Namespace = intern(o.Namespace)
	o.Labels = internMap(o.Labels, repeatedLabel)
	o.Annotations = internMap(o.Annotations, func(string) bool { return false })
	for i, f := range o.Finalizers {
		o.Finalizers[i] = intern(f)
	}
	for i := range o.OwnerReferences {
		r := &o.OwnerReferences[i]
		r.APIVersion, r.Kind = intern(r.APIVersion), intern(r.Kind)
	}
}

// managersOnly returns entries with the managers' names only, one slice
// shared by every object with the same managers (most have just ours).
func managersOnly(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var names []string
	for _, f := range entries {
		if f.Manager != "" {
			names = append(names, f.Manager)
		}
	}
	if len(names) == 0 {
		return nil
	}
	out := make([]metav1.ManagedFieldsEntry, len(names))
	for i, n := range names {
		out[i].Manager = intern(n)
	}
	shared, _ := leaves.share("managers\x00"+strings.Join(names, "\x00"), out).([]metav1.ManagedFieldsEntry)
	return shared
}

// repeatedLabels are the labels whose values are mostly the same across
// objects: the runtime's on its children but for the instance's name and
// UID (shared by a few children only, they would cost the table more than
// they save). They are internal/contract's LabelManagedBy, LabelGraph,
// LabelNodeID and LabelInstanceNamespace, spelt out here because this
// package must not import contract, which imports the compiler; a test
// keeps the two in step.
var repeatedLabels = map[string]bool{
	"app.kubernetes.io/managed-by":      true,
	"fleetgraph.dev/graph":              true,
	"fleetgraph.dev/node-id":            true,
	"fleetgraph.dev/instance-namespace": true,
}

// repeatedLabel reports whether a label's value is mostly the same across
// objects (repeatedLabels).
func repeatedLabel(key string) bool { return repeatedLabels[key] }

// TrimCache is a cluster.Option that makes TrimObject the default
// transform of the cluster's cache, unless the options set one already.
// Measured with the reference workload (BenchmarkWebAppScale, heap
// profile), the cache's part of the hub's heap per ACTIVE instance (the
// instance and its three children's metadata) is about 4.5 KiB with it,
// against 9.5 KiB when only the field sets were dropped.
func TrimCache(o *cluster.Options) {
	if o.Cache.DefaultTransform == nil {
		o.Cache.DefaultTransform = TrimObject
	}
}
