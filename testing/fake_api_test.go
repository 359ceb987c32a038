package testing_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

var fakeWidgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// fakeWidgetCRD declares Widget with the status subresource and a default for
// spec.size.
func fakeWidgetCRD() *apiextensionsv1.CustomResourceDefinition {
	crd := fgtesting.NewCRD(fakeWidgetGVK, "widgets", apiextensionsv1.NamespaceScoped)
	v := &crd.Spec.Versions[0]
	v.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	preserve := true
	v.Schema.OpenAPIV3Schema = &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"size":  {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
			"color": {Type: "string"},
		}},
		"status": {Type: "object", XPreserveUnknownFields: &preserve},
	}}
	return crd
}

func fakeWidget(name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(fakeWidgetGVK)
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

func getFakeWidget(t *testing.T, c client.Client, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fakeWidgetGVK)
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u))
	return u
}

// newFakeWithWidgets returns a fake cluster that has the Widget CRD, applied
// with server-side apply as the hub applies its CRDs.
func newFakeWithWidgets(t *testing.T) *fgtesting.FakeCluster {
	t.Helper()
	cl := fgtesting.NewFakeCluster(fgtesting.FakeClusterOptions{})
	t.Cleanup(cl.Close)
	crd := fakeWidgetCRD()
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	require.NoError(t, cl.GetClient().Create(context.Background(), crd))
	return cl
}

// Discovery answers from the scheme and from the CRDs written to the
// cluster, through client-go's own discovery client; the REST mapper
// follows, and the CRD is Established.
func TestFakeClusterDiscoveryFollowsCRDs(t *testing.T) {
	ctx := context.Background()
	cl := fgtesting.NewFakeCluster(fgtesting.FakeClusterOptions{})
	t.Cleanup(cl.Close)
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cl.GetConfig(), cl.GetHTTPClient())
	require.NoError(t, err)

	core, err := dc.ServerResourcesForGroupVersion("v1")
	require.NoError(t, err)
	assert.Contains(t, fakeKindsIn(core), "ConfigMap")
	apps, err := dc.ServerResourcesForGroupVersion("apps/v1")
	require.NoError(t, err)
	assert.Contains(t, fakeKindsIn(apps), "Deployment")
	_, err = dc.ServerResourcesForGroupVersion(fakeWidgetGVK.GroupVersion().String())
	assert.True(t, apierrors.IsNotFound(err), "a group version not served is NotFound: %v", err)
	_, err = cl.GetRESTMapper().RESTMapping(fakeWidgetGVK.GroupKind(), fakeWidgetGVK.Version)
	assert.Error(t, err)
	admission, err := dc.ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err == nil {
		assert.NotContains(t, fakeKindsIn(admission), "MutatingAdmissionPolicy", "no admission runs, so none is advertised")
	}

	crd := fakeWidgetCRD()
	require.NoError(t, cl.GetClient().Create(ctx, crd))
	got := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, cl.GetClient().Get(ctx, client.ObjectKey{Name: crd.Name}, got))
	assert.True(t, fakeCRDCondition(got, apiextensionsv1.Established), "conditions: %v", got.Status.Conditions)
	assert.True(t, fakeCRDCondition(got, apiextensionsv1.NamesAccepted))
	assert.Equal(t, []string{"v1"}, got.Status.StoredVersions)

	widgets, err := dc.ServerResourcesForGroupVersion(fakeWidgetGVK.GroupVersion().String())
	require.NoError(t, err)
	names := map[string]bool{}
	for _, r := range widgets.APIResources {
		names[r.Name] = r.Namespaced
	}
	assert.Equal(t, map[string]bool{"widgets": true, "widgets/status": true}, names)
	groups, err := dc.ServerGroups()
	require.NoError(t, err)
	assert.Contains(t, fakeGroupNames(groups), "example.com")
	_, all, err := dc.ServerGroupsAndResources()
	require.NoError(t, err, "aggregated discovery")
	assert.Contains(t, fakeResourceNames(all), "example.com/v1 widgets/status")
	assert.Contains(t, fakeResourceNames(all), "v1 configmaps")
	legacy := &metav1.APIGroupList{}
	getJSON(t, cl, "/apis", "application/json", legacy)
	assert.Contains(t, fakeGroupNames(legacy), "example.com", "legacy discovery")
	agg := &apidiscoveryv2.APIGroupDiscoveryList{}
	getJSON(t, cl, "/apis", discovery.AcceptV2, agg)
	var aggGroups []string
	for _, g := range agg.Items {
		aggGroups = append(aggGroups, g.Name)
	}
	assert.Contains(t, aggGroups, "example.com", "aggregated discovery")
	// A discovery-backed mapper, as a manager builds from GetConfig, agrees.
	dynamic, err := apiutil.NewDynamicRESTMapper(cl.GetConfig(), cl.GetHTTPClient())
	require.NoError(t, err)
	dm, err := dynamic.RESTMapping(fakeWidgetGVK.GroupKind(), fakeWidgetGVK.Version)
	require.NoError(t, err)
	assert.Equal(t, meta.RESTScopeNameNamespace, dm.Scope.Name())
	mapping, err := cl.GetRESTMapper().RESTMapping(fakeWidgetGVK.GroupKind(), fakeWidgetGVK.Version)
	require.NoError(t, err)
	assert.Equal(t, "widgets", mapping.Resource.Resource)
	ns, err := cl.GetClient().IsObjectNamespaced(fakeWidget("w", nil))
	require.NoError(t, err)
	assert.True(t, ns)

	v, err := dc.ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "1", v.Major)
	resp, err := cl.GetHTTPClient().Get(cl.GetConfig().Host + "/readyz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, cl.GetClient().Delete(ctx, got))
	_, err = dc.ServerResourcesForGroupVersion(fakeWidgetGVK.GroupVersion().String())
	assert.True(t, apierrors.IsNotFound(err), "a deleted CRD's kinds are no longer served: %v", err)
	_, err = cl.GetRESTMapper().RESTMapping(fakeWidgetGVK.GroupKind(), fakeWidgetGVK.Version)
	assert.Error(t, err)

	cl.Close()
	_, err = dc.ServerVersion()
	assert.Error(t, err, "Close stops the discovery server")
}

// Writes get what an API server would stamp: UID, creation timestamp and a
// generation that moves with the spec; deleting an object with finalizers
// marks it; the CRD's defaults are applied on create, update and apply.
func TestFakeClusterStampsMetadataAndDefaults(t *testing.T) {
	ctx := context.Background()
	cl := newFakeWithWidgets(t)
	c := cl.GetClient()

	require.NoError(t, c.Create(ctx, fakeWidget("w", map[string]any{"color": "red"})))
	w := getFakeWidget(t, c, "w")
	assert.NotEmpty(t, w.GetUID())
	ts := w.GetCreationTimestamp()
	assert.False(t, ts.IsZero())
	assert.EqualValues(t, 1, w.GetGeneration())
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	assert.EqualValues(t, 3, size, "default applied on create")

	w.SetLabels(map[string]string{"a": "b"})
	require.NoError(t, c.Update(ctx, w))
	w = getFakeWidget(t, c, "w")
	assert.EqualValues(t, 1, w.GetGeneration(), "a metadata change keeps the generation")

	require.NoError(t, c.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"color":"blue","size":null}}`))))
	w = getFakeWidget(t, c, "w")
	assert.EqualValues(t, 2, w.GetGeneration(), "a spec change bumps the generation")
	size, _, _ = unstructured.NestedInt64(w.Object, "spec", "size")
	assert.EqualValues(t, 3, size, "default applied again on patch")

	applied := fakeWidget("applied", map[string]any{"color": "green"})
	require.NoError(t, c.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied),
		client.FieldOwner("test"), client.ForceOwnership))
	a := getFakeWidget(t, c, "applied")
	assert.NotEmpty(t, a.GetUID())
	size, _, _ = unstructured.NestedInt64(a.Object, "spec", "size")
	assert.EqualValues(t, 3, size, "default applied on server-side apply")

	w.SetFinalizers([]string{"example.com/hold"})
	require.NoError(t, c.Update(ctx, w))
	require.NoError(t, c.Delete(ctx, w))
	w = getFakeWidget(t, c, "w")
	assert.NotNil(t, w.GetDeletionTimestamp(), "deletion with a finalizer marks the object")
	w.SetFinalizers(nil)
	require.NoError(t, c.Update(ctx, w))
	err := c.Get(ctx, client.ObjectKeyFromObject(w), w)
	assert.True(t, apierrors.IsNotFound(err), "released, it is gone: %v", err)
}

// A CRD kind that declares the status subresource keeps main and status
// writes apart, for merge patches and updates alike.
func TestFakeClusterStatusSubresourceOfCRDKinds(t *testing.T) {
	ctx := context.Background()
	c := newFakeWithWidgets(t).GetClient()

	w := fakeWidget("w", map[string]any{"color": "red"})
	w.Object["status"] = map[string]any{"phase": "ignored"}
	require.NoError(t, c.Create(ctx, w))
	_, found, _ := unstructured.NestedFieldNoCopy(getFakeWidget(t, c, "w").Object, "status")
	assert.False(t, found, "status is dropped on create")

	w = getFakeWidget(t, c, "w")
	require.NoError(t, c.Status().Patch(ctx, w, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"color":"ignored"},"status":{"phase":"Ready"}}`))))
	w = getFakeWidget(t, c, "w")
	phase, _, _ := unstructured.NestedString(w.Object, "status", "phase")
	color, _, _ := unstructured.NestedString(w.Object, "spec", "color")
	assert.Equal(t, "Ready", phase)
	assert.Equal(t, "red", color, "a status write leaves the spec")
	assert.EqualValues(t, 1, w.GetGeneration())

	require.NoError(t, c.Patch(ctx, w, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"color":"blue"},"status":{"phase":"ignored"}}`))))
	w = getFakeWidget(t, c, "w")
	phase, _, _ = unstructured.NestedString(w.Object, "status", "phase")
	color, _, _ = unstructured.NestedString(w.Object, "spec", "color")
	assert.Equal(t, "Ready", phase, "a main write leaves the status")
	assert.Equal(t, "blue", color)

	require.NoError(t, unstructured.SetNestedField(w.Object, "Done", "status", "phase"))
	require.NoError(t, c.Status().Update(ctx, w))
	phase, _, _ = unstructured.NestedString(getFakeWidget(t, c, "w").Object, "status", "phase")
	assert.Equal(t, "Done", phase)
}

// Server-side apply through the cluster's client owns fields: a field the
// manager stops applying is removed, and another manager's field stays.
func TestFakeClusterServerSideApply(t *testing.T) {
	ctx := context.Background()
	c := newFakeWithWidgets(t).GetClient()
	apply := func(manager string, spec map[string]any) {
		t.Helper()
		require.NoError(t, c.Apply(ctx, client.ApplyConfigurationFromUnstructured(fakeWidget("w", spec)),
			client.FieldOwner(manager), client.ForceOwnership))
	}
	apply("one", map[string]any{"color": "red", "shape": "round"})
	apply("two", map[string]any{"owner": "two"})
	apply("one", map[string]any{"color": "blue"})
	spec, _, _ := unstructured.NestedMap(getFakeWidget(t, c, "w").Object, "spec")
	assert.Equal(t, map[string]any{"color": "blue", "owner": "two", "size": int64(3)}, spec)
}

// When an owner is deleted, the objects it owned go too, in the
// background; an object with another live owner stays.
func TestFakeClusterCollectsGarbage(t *testing.T) {
	ctx := context.Background()
	c := newFakeWithWidgets(t).GetClient()
	require.NoError(t, c.Create(ctx, fakeWidget("owner", nil)))
	require.NoError(t, c.Create(ctx, fakeWidget("other", nil)))
	owner, other := getFakeWidget(t, c, "owner"), getFakeWidget(t, c, "other")
	ref := func(u *unstructured.Unstructured) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), UID: u.GetUID()}
	}
	owned := configMap("owned")
	owned.OwnerReferences = []metav1.OwnerReference{ref(owner)}
	shared := configMap("shared")
	shared.OwnerReferences = []metav1.OwnerReference{ref(owner), ref(other)}
	require.NoError(t, c.Create(ctx, owned))
	require.NoError(t, c.Create(ctx, shared))

	require.NoError(t, c.Delete(ctx, owner))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(owned), &corev1.ConfigMap{}))
	}, 5*time.Second, time.Millisecond, "the owned ConfigMap is collected")
	assert.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(shared), &corev1.ConfigMap{}),
		"an object with a live owner stays")
}

// A metadata-only informer, as controllers use for children, receives
// PartialObjectMetadata for adds, updates and deletes of typed and
// CRD-defined kinds.
func TestFakeClusterMetadataInformerSeesUpdates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := newFakeWithWidgets(t)
	go func() { _ = cl.Start(ctx) }()
	c := cl.GetClient()

	for _, gvk := range []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap"), fakeWidgetGVK} {
		rec := &fakeMetaEvents{}
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		inf, err := cl.GetCache().GetInformer(ctx, obj)
		require.NoError(t, err)
		reg, err := inf.AddEventHandler(rec)
		require.NoError(t, err)
		require.Eventually(t, reg.HasSynced, 5*time.Second, time.Millisecond)

		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace("default")
		u.SetName("m")
		require.NoError(t, c.Create(ctx, u))
		u.SetLabels(map[string]string{"changed": "yes"})
		require.NoError(t, c.Update(ctx, u))
		require.NoError(t, c.Delete(ctx, u))
		require.Eventually(t, func() bool { return rec.seen() == "add update:yes delete " }, 5*time.Second, time.Millisecond,
			"%s: got %q", gvk.Kind, rec.seen())
	}
}

// fakeMetaEvents records what a handler receives, refusing anything that is
// not metadata only.
type fakeMetaEvents struct {
	mu  sync.Mutex
	log string
}

func (m *fakeMetaEvents) add(kind string, obj any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		m.log += "wrong-type "
		return
	}
	if kind == "update" {
		kind += ":" + p.Labels["changed"]
	}
	m.log += kind + " "
}

func (m *fakeMetaEvents) seen() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.log
}

func (m *fakeMetaEvents) OnAdd(obj any, _ bool) { m.add("add", obj) }
func (m *fakeMetaEvents) OnUpdate(_, obj any)   { m.add("update", obj) }
func (m *fakeMetaEvents) OnDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m.add("delete", obj)
}

func fakeKindsIn(l *metav1.APIResourceList) []string {
	var out []string
	for _, r := range l.APIResources {
		out = append(out, r.Kind)
	}
	return out
}

func fakeResourceNames(lists []*metav1.APIResourceList) []string {
	var out []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			out = append(out, l.GroupVersion+" "+r.Name)
		}
	}
	return out
}

func getJSON(t *testing.T, cl *fgtesting.FakeCluster, path, accept string, into any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, cl.GetConfig().Host+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", accept)
	resp, err := cl.GetHTTPClient().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, accept, resp.Header.Get("Content-Type"))
	require.NoError(t, json.NewDecoder(resp.Body).Decode(into))
}

func fakeGroupNames(l *metav1.APIGroupList) []string {
	var out []string
	for _, g := range l.Groups {
		out = append(out, g.Name)
	}
	return out
}

func fakeCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == typ {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
