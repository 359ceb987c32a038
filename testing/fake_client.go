package testing

import (
	"context"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

var _ client.WithWatch = &fakeAPIClient{}

// fakeAPIClient is the fake client with the status subresource of
// CRD-defined kinds, which the fake client only knows for kinds declared
// when it is built. A status write of such a kind goes to the store as a
// main write marked as a status write (fakeStore.statusWrite); writes are
// serialised so that the mark names exactly one write. It also runs the
// store's garbage collection.
type fakeAPIClient struct {
	client.WithWatch
	store *fakeStore

	writeMu sync.Mutex

	primeMu sync.Mutex
	primed  map[schema.GroupVersionKind]bool
}

func newFakeAPIClient(inner client.WithWatch, store *fakeStore) *fakeAPIClient {
	c := &fakeAPIClient{WithWatch: inner, store: store, primed: map[schema.GroupVersionKind]bool{}}
	store.collect = c.collect
	return c
}

func (c *fakeAPIClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.prime(ctx, obj)
	return c.WithWatch.Get(ctx, key, obj, opts...)
}

func (c *fakeAPIClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.prime(ctx, list)
	return c.WithWatch.List(ctx, list, opts...)
}

func (c *fakeAPIClient) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	c.prime(ctx, list)
	return c.WithWatch.Watch(ctx, list, opts...)
}

// prime makes the fake client register a kind it does not know as
// unstructured before a metadata-only read of it: the fake client registers
// an unknown kind as the type it first sees it in, and would then store
// objects of a kind first read as metadata as metadata only.
func (c *fakeAPIClient) prime(ctx context.Context, obj runtime.Object) {
	var gvk schema.GroupVersionKind
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		gvk = o.GroupVersionKind()
	case *metav1.PartialObjectMetadataList:
		gvk = o.GroupVersionKind()
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	default:
		return
	}
	c.primeMu.Lock()
	defer c.primeMu.Unlock()
	if c.primed[gvk] {
		return
	}
	c.primed[gvk] = true
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	_ = c.WithWatch.Get(ctx, client.ObjectKey{Name: "fake-cluster-prime"}, u)
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	_ = c.WithWatch.List(ctx, l)
}

func (c *fakeAPIClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.locked(func() error { return c.WithWatch.Create(ctx, obj, opts...) })
}

func (c *fakeAPIClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.locked(func() error { return c.WithWatch.Update(ctx, obj, opts...) })
}

func (c *fakeAPIClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.locked(func() error { return c.WithWatch.Patch(ctx, obj, patch, opts...) })
}

func (c *fakeAPIClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return c.locked(func() error { return c.WithWatch.Apply(ctx, obj, opts...) })
}

func (c *fakeAPIClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.locked(func() error { return c.WithWatch.Delete(ctx, obj, opts...) })
}

func (c *fakeAPIClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return c.locked(func() error { return c.WithWatch.DeleteAllOf(ctx, obj, opts...) })
}

// locked runs write under the write lock.
func (c *fakeAPIClient) locked(write func() error) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return write()
}

func (c *fakeAPIClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *fakeAPIClient) SubResource(name string) client.SubResourceClient {
	return &fakeSubResource{SubResourceClient: c.WithWatch.SubResource(name), c: c, name: name}
}

// dynamicStatus reports whether obj is of a CRD-defined kind with the
// status subresource.
func (c *fakeAPIClient) dynamicStatus(obj client.Object) bool {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		var err error
		if gvk, err = apiutil.GVKForObject(obj, c.Scheme()); err != nil {
			return false
		}
	}
	k, ok := c.store.api.kind(gvk)
	return ok && k.status
}

// asStatusWrite runs write, a main write of obj, marked as a status write.
// c.writeMu must be held.
func (c *fakeAPIClient) asStatusWrite(obj client.Object, write func() error) error {
	c.store.statusWrite = &objectRef{namespace: obj.GetNamespace(), name: obj.GetName()}
	defer func() { c.store.statusWrite = nil }()
	return write()
}

// collect deletes, in the background as the garbage collector does,
// dependents of a deleted owner that have no owner left.
func (c *fakeAPIClient) collect(_ types.UID, dependents []objectRef) {
	ctx := context.Background()
	for _, ref := range dependents {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(ref.gvk)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ref.namespace, Name: ref.name}, obj); err != nil {
			continue
		}
		var owners []types.UID
		for _, o := range obj.OwnerReferences {
			owners = append(owners, o.UID)
		}
		if !c.store.ownersGone(owners) {
			continue
		}
		err := c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
	}
}

// fakeSubResource routes status writes of CRD-defined kinds through the
// store's status handling and serialises every subresource write.
type fakeSubResource struct {
	client.SubResourceClient
	c    *fakeAPIClient
	name string
}

func (s *fakeSubResource) dynamic(obj client.Object) bool {
	return s.name == "status" && s.c.dynamicStatus(obj)
}

func (s *fakeSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return s.c.locked(func() error { return s.SubResourceClient.Create(ctx, obj, sub, opts...) })
}

func (s *fakeSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	o := &client.SubResourceUpdateOptions{}
	o.ApplyOptions(opts)
	return s.write(obj, func() error { return s.SubResourceClient.Update(ctx, obj, opts...) },
		func() error { return s.c.WithWatch.Update(ctx, obj, &o.UpdateOptions) })
}

func (s *fakeSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	o := &client.SubResourcePatchOptions{}
	o.ApplyOptions(opts)
	return s.write(obj, func() error { return s.SubResourceClient.Patch(ctx, obj, patch, opts...) },
		func() error { return s.c.WithWatch.Patch(ctx, obj, patch, &o.PatchOptions) })
}

// write runs a subresource write of obj: as the fake client does it, or,
// for the status of a CRD-defined kind, as main, a main write marked as a
// status write.
func (s *fakeSubResource) write(obj client.Object, plain, main func() error) error {
	return s.c.locked(func() error {
		if !s.dynamic(obj) {
			return plain()
		}
		return s.c.asStatusWrite(obj, main)
	})
}

func (s *fakeSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return s.c.locked(func() error { return s.SubResourceClient.Apply(ctx, obj, opts...) })
}
