package testing

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoapplyconfigurations "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/fleetgraph/fleetgraph/internal/crdschema"
)

// fakeStore is the object store under the fake client's field manager: it
// is where a write arrives as the whole object about to be stored, whatever
// the verb (create, update, patch or server-side apply). It does what an API
// server does at that point and the fake client does not: UIDs, creation
// timestamps and generations; the status subresource and schema defaults of
// CRD-defined kinds; CRDs that become Established and make their kinds
// known; and, after a deletion, background garbage collection of the
// objects it owned.
type fakeStore struct {
	clienttesting.ObjectTracker
	scheme *runtime.Scheme
	api    *fakeAPI
	// statusWrite names the object whose write in progress comes through
	// the status subresource; set by fakeAPIClient under its write lock.
	statusWrite *objectRef
	// collect deletes the dependents of a deleted owner; set once the
	// client exists.
	collect func(owner types.UID, dependents []objectRef)

	mu     sync.Mutex
	owners map[types.UID]map[objectRef]bool // owner UID -> dependents
	live   map[types.UID]objectRef
}

// objectRef names one stored object.
type objectRef struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

// newFieldManagedStore builds the tracker stack the fake client would build
// itself (managed fields over a plain tracker), with store in the middle.
func newFieldManagedStore(scheme *runtime.Scheme, store *fakeStore) clienttesting.ObjectTracker {
	clientGoScheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(clientGoScheme); err != nil {
		panic(fmt.Sprintf("client-go scheme: %v", err))
	}
	managed := clienttesting.NewFieldManagedObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder(),
		multiTypeConverter{clientgoapplyconfigurations.NewTypeConverter(clientGoScheme), managedfields.NewDeducedTypeConverter()})
	store.ObjectTracker = clienttesting.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())
	// The field-managed tracker embeds the plain tracker it writes to; put
	// the store there (TestFakeClusterStampsMetadataAndDefaults sees an
	// applied object get its UID through it).
	inner := reflect.ValueOf(managed).Elem().FieldByName("ObjectTracker")
	if !inner.IsValid() || !inner.CanSet() {
		panic("fake cluster: client-go's field-managed tracker no longer embeds an ObjectTracker")
	}
	inner.Set(reflect.ValueOf(clienttesting.ObjectTracker(store)))
	return managed
}

func (s *fakeStore) Add(obj runtime.Object) error {
	return s.write(obj, func() error { return s.admit(nil, obj, true) }, func() error { return s.ObjectTracker.Add(obj) })
}

func (s *fakeStore) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	return s.write(obj, func() error { return s.admit(nil, obj, false) },
		func() error { return s.ObjectTracker.Create(gvr, obj, ns, opts...) })
}

func (s *fakeStore) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	return s.write(obj, func() error { return s.admitUpdate(gvr, obj, ns) },
		func() error { return s.ObjectTracker.Update(gvr, obj, ns, opts...) })
}

func (s *fakeStore) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	return s.write(obj, func() error { return s.admitUpdate(gvr, obj, ns) },
		func() error { return s.ObjectTracker.Patch(gvr, obj, ns, opts...) })
}

// write admits obj, stores it and records what storing it changed.
func (s *fakeStore) write(obj runtime.Object, admit, store func() error) error {
	if err := admit(); err != nil {
		return err
	}
	if err := store(); err != nil {
		return err
	}
	s.stored(obj)
	return nil
}

func (s *fakeStore) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	old, err := s.ObjectTracker.Get(gvr, ns, name)
	if err != nil {
		return err
	}
	if err := s.ObjectTracker.Delete(gvr, ns, name, opts...); err != nil {
		return err
	}
	s.deleted(old)
	return nil
}

func (s *fakeStore) admitUpdate(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	old, err := s.ObjectTracker.Get(gvr, ns, accessor.GetName())
	if err != nil {
		return err
	}
	return s.admit(old, obj, false)
}

// admit turns obj, about to replace old (nil on create), into what an API
// server would store.
func (s *fakeStore) admit(old, obj runtime.Object, initial bool) error {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	u, err := decoded(obj)
	if err != nil {
		return fmt.Errorf("fake cluster: %s: %w", gvk, err)
	}
	var prev map[string]any
	if old != nil {
		if prev, err = decoded(old); err != nil {
			return fmt.Errorf("fake cluster: %s: %w", gvk, err)
		}
	}
	k, _ := s.api.kind(gvk)
	u = s.subresources(k, prev, u, initial)
	if k.schema != nil {
		crdschema.Default(u, k.schema)
	}
	stampMetadata(prev, u)
	if gvk.GroupKind() == crdGVK.GroupKind() {
		if err := establish(u); err != nil {
			return err
		}
	}
	if out, ok := obj.(*unstructured.Unstructured); ok {
		out.Object = u
		out.SetGroupVersionKind(gvk)
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
}

// decoded returns obj's content as an API server decodes it from JSON:
// typed nil maps and slices become null, whole numbers int64.
func decoded(obj runtime.Object) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// subresources keeps the status of a kind that has the status subresource
// out of main writes, and everything but the status out of status writes.
// The fake client does this itself for built-in kinds.
func (s *fakeStore) subresources(k apiKind, prev, u map[string]any, initial bool) map[string]any {
	if !k.status || initial {
		return u
	}
	if prev == nil {
		delete(u, "status")
		return u
	}
	if s.isStatusWrite(u) {
		out := runtime.DeepCopyJSON(prev)
		if status, ok := u["status"]; ok {
			out["status"] = status
		} else {
			delete(out, "status")
		}
		for _, f := range []string{"resourceVersion", "managedFields"} {
			if v, ok, _ := unstructured.NestedFieldNoCopy(u, "metadata", f); ok {
				_ = unstructured.SetNestedField(out, v, "metadata", f)
			}
		}
		return out
	}
	if status, ok := prev["status"]; ok {
		u["status"] = status
	} else {
		delete(u, "status")
	}
	return u
}

func (s *fakeStore) isStatusWrite(u map[string]any) bool {
	ref := s.statusWrite
	if ref == nil {
		return false
	}
	obj := &unstructured.Unstructured{Object: u}
	return obj.GetName() == ref.name && obj.GetNamespace() == ref.namespace
}

// stampMetadata sets what the API server owns in metadata: a new object
// gets a UID, a creation timestamp and generation 1; an update keeps them,
// and the generation goes up when anything but metadata and status changed
// or deletion began.
func stampMetadata(prev, u map[string]any) {
	obj := &unstructured.Unstructured{Object: u}
	if prev == nil {
		if obj.GetUID() == "" {
			obj.SetUID(uuid.NewUUID())
		}
		if ts := obj.GetCreationTimestamp(); ts.IsZero() {
			obj.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
		}
		if obj.GetGeneration() == 0 {
			obj.SetGeneration(1)
		}
		return
	}
	old := &unstructured.Unstructured{Object: prev}
	obj.SetUID(old.GetUID())
	obj.SetCreationTimestamp(old.GetCreationTimestamp())
	gen := old.GetGeneration()
	if specChanged(prev, u) || (old.GetDeletionTimestamp() == nil && obj.GetDeletionTimestamp() != nil) {
		gen++
	}
	obj.SetGeneration(gen)
}

func specChanged(prev, u map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" {
				out[k] = v
			}
		}
		return out
	}
	return !equality.Semantic.DeepEqual(strip(prev), strip(u))
}

// establish accepts a CRD's names and marks it Established at once.
func establish(u map[string]any) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, crd); err != nil {
		return fmt.Errorf("fake cluster: decoding CRD: %w", err)
	}
	crd.Status.AcceptedNames = crd.Spec.Names
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for _, c := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.NamesAccepted, apiextensionsv1.Established} {
		setCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: c, Status: apiextensionsv1.ConditionTrue, Reason: "FakeCluster", Message: "accepted by the fake cluster", LastTransitionTime: now,
		})
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage && !containsString(crd.Status.StoredVersions, v.Name) {
			crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
		}
	}
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&crd.Status)
	if err != nil {
		return fmt.Errorf("fake cluster: encoding CRD status: %w", err)
	}
	u["status"] = status
	return nil
}

func setCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition) {
	for i, have := range crd.Status.Conditions {
		if have.Type == c.Type {
			if have.Status == c.Status {
				c.LastTransitionTime = have.LastTransitionTime
			}
			crd.Status.Conditions[i] = c
			return
		}
	}
	crd.Status.Conditions = append(crd.Status.Conditions, c)
}

func containsString(list []string, s string) bool {
	for _, have := range list {
		if have == s {
			return true
		}
	}
	return false
}

// stored records obj's owners, and, for a CRD, makes its kinds known.
func (s *fakeStore) stored(obj runtime.Object) {
	ref, accessor, ok := s.refOf(obj)
	if !ok {
		return
	}
	if ref.gvk.GroupKind() == crdGVK.GroupKind() {
		if crd, err := toCRD(obj); err == nil {
			s.api.setCRD(crd)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owners == nil {
		s.owners, s.live = map[types.UID]map[objectRef]bool{}, map[types.UID]objectRef{}
	}
	s.live[accessor.GetUID()] = ref
	for _, o := range accessor.GetOwnerReferences() {
		if s.owners[o.UID] == nil {
			s.owners[o.UID] = map[objectRef]bool{}
		}
		s.owners[o.UID][ref] = true
	}
}

// deleted forgets obj, drops a CRD's kinds, and hands obj's dependents
// whose owners are all gone to the garbage collector.
func (s *fakeStore) deleted(obj runtime.Object) {
	ref, accessor, ok := s.refOf(obj)
	if !ok {
		return
	}
	if ref.gvk.GroupKind() == crdGVK.GroupKind() {
		s.api.dropCRD(accessor.GetName())
	}
	s.mu.Lock()
	delete(s.live, accessor.GetUID())
	for _, o := range accessor.GetOwnerReferences() {
		delete(s.owners[o.UID], ref)
	}
	dependents := s.owners[accessor.GetUID()]
	delete(s.owners, accessor.GetUID())
	var orphans []objectRef
	for dep := range dependents {
		orphans = append(orphans, dep)
	}
	collect := s.collect
	s.mu.Unlock()
	if len(orphans) > 0 && collect != nil {
		go collect(accessor.GetUID(), orphans)
	}
}

// ownersGone reports whether none of uids is stored any more.
func (s *fakeStore) ownersGone(uids []types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, uid := range uids {
		if _, ok := s.live[uid]; ok {
			return false
		}
	}
	return true
}

func (s *fakeStore) refOf(obj runtime.Object) (objectRef, metav1.Object, bool) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return objectRef{}, nil, false
	}
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return objectRef{}, nil, false
	}
	return objectRef{gvk: gvk, namespace: accessor.GetNamespace(), name: accessor.GetName()}, accessor, true
}

func toCRD(obj runtime.Object) (*apiextensionsv1.CustomResourceDefinition, error) {
	if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		return crd, nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	return crd, runtime.DefaultUnstructuredConverter.FromUnstructured(u, crd)
}

// multiTypeConverter tries each converter in turn, as the fake client's own
// does: typed converters for known kinds, deduced ones for the rest.
type multiTypeConverter []managedfields.TypeConverter

func (m multiTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	var errs []error
	for _, c := range m {
		v, err := c.ObjectToTyped(obj, opts...)
		if err == nil {
			return v, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no type converter handles %T: %v", obj, errs)
}

func (m multiTypeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	var errs []error
	for _, c := range m {
		obj, err := c.TypedToObject(v)
		if err == nil {
			return obj, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no type converter handles the value: %v", errs)
}
