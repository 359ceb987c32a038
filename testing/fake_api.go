package testing

import (
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"

	"github.com/fleetgraph/fleetgraph/internal/crdschema"
)

// crdGVK is the kind whose writes make new kinds known.
var crdGVK = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")

// apiKind is one kind a fake cluster serves: a built-in one from its scheme
// or one declared by a stored CRD.
type apiKind struct {
	gvk        schema.GroupVersionKind
	plural     string
	singular   string
	namespaced bool
	shortNames []string
	// status is whether a CRD declared the status subresource. Built-in
	// kinds are handled by the fake client itself.
	status bool
	// schema is the CRD version's structural schema, for defaulting; nil
	// for built-in kinds or a CRD version without a usable schema.
	schema *structuralschema.Structural
}

// fakeAPI is what a fake cluster's API server would know: the kinds it
// serves, for discovery, the REST mapper and the store's admission hooks.
// Safe for concurrent use.
type fakeAPI struct {
	builtin []apiKind

	mu     sync.RWMutex
	crds   map[string][]apiKind // by CRD name
	byGVK  map[schema.GroupVersionKind]apiKind
	mapper meta.RESTMapper
}

func newFakeAPI(scheme *runtime.Scheme) *fakeAPI {
	a := &fakeAPI{builtin: builtinKinds(scheme), crds: map[string][]apiKind{}}
	a.rebuildLocked()
	return a
}

// kind returns what the cluster knows about gvk.
func (a *fakeAPI) kind(gvk schema.GroupVersionKind) (apiKind, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	k, ok := a.byGVK[gvk]
	return k, ok
}

// all returns every served kind.
func (a *fakeAPI) all() []apiKind {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]apiKind, 0, len(a.byGVK))
	for _, k := range a.byGVK {
		out = append(out, k)
	}
	return out
}

func (a *fakeAPI) currentMapper() meta.RESTMapper {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.mapper
}

// setCRD makes the kinds crd serves known, replacing what an earlier
// version of it declared.
func (a *fakeAPI) setCRD(crd *apiextensionsv1.CustomResourceDefinition) {
	var kinds []apiKind
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		kinds = append(kinds, apiKind{
			gvk:        schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind},
			plural:     crd.Spec.Names.Plural,
			singular:   singularOf(crd),
			namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			shortNames: crd.Spec.Names.ShortNames,
			status:     v.Subresources != nil && v.Subresources.Status != nil,
			schema:     crdschema.Structural(v.Schema),
		})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.crds[crd.Name] = kinds
	a.rebuildLocked()
}

// dropCRD forgets the kinds the named CRD served.
func (a *fakeAPI) dropCRD(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.crds[name]; !ok {
		return
	}
	delete(a.crds, name)
	a.rebuildLocked()
}

func (a *fakeAPI) rebuildLocked() {
	a.byGVK = map[schema.GroupVersionKind]apiKind{}
	for _, k := range a.builtin {
		a.byGVK[k.gvk] = k
	}
	for _, kinds := range a.crds {
		for _, k := range kinds {
			a.byGVK[k.gvk] = k
		}
	}
	gvs := map[schema.GroupVersion]bool{}
	for gvk := range a.byGVK {
		gvs[gvk.GroupVersion()] = true
	}
	m := meta.NewDefaultRESTMapper(slices.Collect(maps.Keys(gvs)))
	for _, k := range a.byGVK {
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		m.AddSpecific(k.gvk, k.gvk.GroupVersion().WithResource(k.plural), k.gvk.GroupVersion().WithResource(k.singular), scope)
	}
	a.mapper = m
}

func singularOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	if crd.Spec.Names.Singular != "" {
		return crd.Spec.Names.Singular
	}
	return strings.ToLower(crd.Spec.Names.Kind)
}

// clusterScoped names the built-in kinds that are not namespaced; the
// scheme does not say.
var clusterScoped = sets.New(
	"Namespace", "Node", "PersistentVolume", "ComponentStatus", "ClusterRole", "ClusterRoleBinding",
	"CustomResourceDefinition", "APIService", "StorageClass", "CSIDriver", "CSINode", "VolumeAttachment",
	"VolumeAttributesClass", "PriorityClass", "IngressClass", "RuntimeClass", "CertificateSigningRequest",
	"ClusterTrustBundle", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
	"MutatingAdmissionPolicyBinding", "FlowSchema", "PriorityLevelConfiguration", "StorageVersion",
	"StorageVersionMigration", "IPAddress", "ServiceCIDR", "DeviceClass", "ResourceSlice", "DeviceTaintRule",
	"TokenReview", "SelfSubjectReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview", "SubjectAccessReview",
)

// notServed names built-in kinds a fake cluster does not advertise because
// it cannot honour them: it runs no admission.
var notServed = sets.New(
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
	"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
)

// builtinKinds lists the object kinds scheme knows that have a list kind:
// what an API server built from that scheme would serve. The
// CustomResourceDefinition kind is always served.
func builtinKinds(scheme *runtime.Scheme) []apiKind {
	seen := map[schema.GroupVersionKind]bool{crdGVK: true}
	out := []apiKind{builtinKind(crdGVK)}
	for gvk, typ := range scheme.AllKnownTypes() {
		if seen[gvk] || !servable(scheme, gvk, typ) {
			continue
		}
		seen[gvk] = true
		out = append(out, builtinKind(gvk))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvk.String() < out[j].gvk.String() })
	return out
}

func servable(scheme *runtime.Scheme, gvk schema.GroupVersionKind, typ reflect.Type) bool {
	if gvk.Version == runtime.APIVersionInternal || gvk.Group == metav1.GroupName ||
		strings.HasSuffix(gvk.Kind, "List") || notServed.Has(gvk.Kind) {
		return false
	}
	if !scheme.Recognizes(gvk.GroupVersion().WithKind(gvk.Kind + "List")) {
		return false
	}
	_, isObject := reflect.New(typ).Interface().(metav1.Object)
	return isObject
}

func builtinKind(gvk schema.GroupVersionKind) apiKind {
	plural, singular := meta.UnsafeGuessKindToResource(gvk)
	return apiKind{gvk: gvk, plural: plural.Resource, singular: singular.Resource, namespaced: !clusterScoped.Has(gvk.Kind)}
}

// fakeMapper is a RESTMapper that follows the kinds a fakeAPI serves as
// CRDs come and go.
type fakeMapper struct{ api *fakeAPI }

var _ meta.RESTMapper = fakeMapper{}

func (m fakeMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return m.api.currentMapper().KindFor(r)
}

func (m fakeMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return m.api.currentMapper().KindsFor(r)
}

func (m fakeMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return m.api.currentMapper().ResourceFor(r)
}

func (m fakeMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return m.api.currentMapper().ResourcesFor(r)
}

func (m fakeMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return m.api.currentMapper().RESTMapping(gk, versions...)
}

func (m fakeMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return m.api.currentMapper().RESTMappings(gk, versions...)
}

func (m fakeMapper) ResourceSingularizer(resource string) (string, error) {
	return m.api.currentMapper().ResourceSingularizer(resource)
}

// fakeVersion is what /version answers.
var fakeVersion = version.Info{Major: "1", Minor: "36", GitVersion: "v1.36.0-fleetgraph-fake", Platform: "fake"}
