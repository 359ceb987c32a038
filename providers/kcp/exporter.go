package kcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/crdcompat"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// This file publishes graphs the kcp way, for service providers: instead of
// a CRD per cluster, a graph's generated CRD becomes an APIResourceSchema in
// the provider's workspace, listed in one APIExport that consumer
// workspaces bind. Each engaged cluster is then a consumer seen through the
// export's virtual workspace (APIExportProvider), and the hub checks the
// consumer's APIBinding (binding.go) instead of applying anything.
//
// APIResourceSchemas are immutable, so each schema is named after a hash of
// its content (v<hash>.<plural>.<group>): a changed schema is a new object,
// and the export's resource is switched to it only when the change is
// compatible with the schema it lists (or the graph allows breaking
// changes); until then the previous schema keeps serving.

var (
	apiResourceSchemaGVK = apisv1alpha1.SchemeGroupVersion.WithKind("APIResourceSchema")
	// apiExportGVK is the served version of APIExport whose permission
	// claims carry verbs (kcp 0.28 and later).
	apiExportGVK = schema.GroupVersionKind{Group: "apis.kcp.io", Version: "v1alpha2", Kind: "APIExport"}
	// ClaimVerbs are the verbs of every permission claim the export asks
	// for: what the spoke runtime does with children.
	ClaimVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
)

// exporter publishes graphs as APIResourceSchemas of one APIExport, in the
// provider workspace its client reaches. Safe for concurrent use.
type exporter struct {
	c    client.Client
	name string
	// mu serialises this process's read-modify-write of the export.
	mu sync.Mutex
	// published holds, per graph name, the last publication written, so
	// that the gate of thousands of consumers costs no read of the export
	// each; a graph whose schema changes is published again.
	published map[string]publication
}

// publication is what publish put in the export for one graph.
type publication struct {
	// Schema is the APIResourceSchema's name, v<hash>.<plural>.<group>.
	Schema string
	// Resource is the instance resource the schema defines.
	Resource schema.GroupResource
	// Claims are the permission claims the graph's children need, sorted.
	Claims []schema.GroupResource
}

// newExporter returns an exporter of the APIExport called name, writing
// through cfg, which must reach the provider workspace
// (<server>/clusters/<path>) with rights to create APIResourceSchemas and
// update the APIExport.
func newExporter(cfg *rest.Config, name string) (*exporter, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("client for the provider workspace: %w", err)
	}
	return &exporter{c: c, name: name, published: map[string]publication{}}, nil
}

// schemaFor converts g's CRD to its APIResourceSchema, named after a hash
// of the CRD's spec.
func schemaFor(g hub.Graph) (*apisv1alpha1.APIResourceSchema, error) {
	spec, err := json.Marshal(g.CRD.Spec)
	if err != nil {
		return nil, fmt.Errorf("hashing the schema of graph %s: %w", g.Name, err)
	}
	sum := sha256.Sum256(spec)
	ars, err := apisv1alpha1.CRDToAPIResourceSchema(g.CRD, "v"+hex.EncodeToString(sum[:])[:10])
	if err != nil {
		return nil, fmt.Errorf("converting the CRD of graph %s to an APIResourceSchema: %w", g.Name, err)
	}
	ars.Labels = map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByFleetgraph, v1alpha1.LabelGraph: g.Name}
	ars.SetGroupVersionKind(apiResourceSchemaGVK)
	return ars, nil
}

// publicationOf is what publishing g puts in the export: g's schema, its
// resource and the claims its kinds need.
func (e *exporter) publicationOf(g hub.Graph) (*apisv1alpha1.APIResourceSchema, publication, error) {
	ars, err := schemaFor(g)
	if err != nil {
		return nil, publication{}, err
	}
	pub := publication{Schema: ars.Name, Resource: schema.GroupResource{Group: g.CRD.Spec.Group, Resource: g.CRD.Spec.Names.Plural}}
	pub.Claims, err = e.claims(g)
	return ars, pub, err
}

// publish makes g's schema the one the export lists for g's instance
// resource, with permission claims for g's kinds. A schema change that
// would break the listed schema is refused with hub.ErrIncompatible
// (unless the graph allows it), and the export is left as it is.
func (e *exporter) publish(ctx context.Context, g hub.Graph) (publication, error) {
	ars, pub, err := e.publicationOf(g)
	if err != nil {
		return pub, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if done, ok := e.published[g.Name]; ok && done.Schema == pub.Schema && slices.Equal(done.Claims, pub.Claims) {
		return done, nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		export, err := e.export(ctx)
		if err != nil {
			return err
		}
		if err := e.checkChange(ctx, g, export, pub); err != nil {
			return err
		}
		if err := e.ensureSchema(ctx, ars); err != nil {
			return err
		}
		return e.writeExport(ctx, export, pub)
	})
	if err == nil {
		e.published[g.Name] = pub
	}
	return pub, err
}

// claims maps g's kinds (children and external references) to the
// resources the export must claim, through the provider workspace's
// discovery.
func (e *exporter) claims(g hub.Graph) ([]schema.GroupResource, error) {
	seen := map[schema.GroupResource]bool{}
	var out []schema.GroupResource
	for _, k := range g.Kinds {
		m, err := e.c.RESTMapper().RESTMapping(k.GroupKind(), k.Version)
		if err != nil {
			return nil, fmt.Errorf("%w: kind %s is not served in the provider workspace, so the export cannot claim it: %w",
				hub.ErrIncompatible, k, err)
		}
		gr := m.Resource.GroupResource()
		if !seen[gr] {
			seen[gr] = true
			out = append(out, gr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// export reads the APIExport; nil if it does not exist.
func (e *exporter) export(ctx context.Context) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiExportGVK)
	err := e.c.Get(ctx, client.ObjectKey{Name: e.name}, u)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading APIExport %s: %w", e.name, err)
	}
	return u, nil
}

// checkChange refuses to switch the export from the schema it lists for
// pub's resource to one that would break it, unless g allows that.
func (e *exporter) checkChange(ctx context.Context, g hub.Graph, export *unstructured.Unstructured, pub publication) error {
	current := listedSchema(export, pub.Resource)
	if current == "" || current == pub.Schema || g.AllowBreaking {
		return nil
	}
	old := &apisv1alpha1.APIResourceSchema{}
	if err := e.getSchema(ctx, current, old); err != nil {
		return fmt.Errorf("reading the listed APIResourceSchema %s: %w", current, err)
	}
	oldCRD, err := schemaCRD(old)
	if err != nil {
		return err
	}
	if breaks := crdcompat.Breaks(oldCRD, g.CRD); len(breaks) > 0 {
		return fmt.Errorf("%w: APIExport %s keeps serving %s: %s (annotate the RGD %s=true or %s=true to allow)",
			hub.ErrIncompatible, e.name, current, crdcompat.Message(breaks),
			v1alpha1.AnnotationKroAllowBreakingChanges, v1alpha1.AnnotationAllowBreakingChanges)
	}
	return nil
}

func (e *exporter) getSchema(ctx context.Context, name string, into *apisv1alpha1.APIResourceSchema) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiResourceSchemaGVK)
	if err := e.c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// ensureSchema creates ars unless it exists; a schema of that name that
// fleetgraph did not create is a conflict (the content is in the name, so
// ours never needs an update).
func (e *exporter) ensureSchema(ctx context.Context, ars *apisv1alpha1.APIResourceSchema) error {
	existing := &apisv1alpha1.APIResourceSchema{}
	err := e.getSchema(ctx, ars.Name, existing)
	switch {
	case err == nil && existing.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByFleetgraph:
		return fmt.Errorf("%w: APIResourceSchema %s", hub.ErrConflict, ars.Name)
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading APIResourceSchema %s: %w", ars.Name, err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ars)
	if err != nil {
		return fmt.Errorf("converting APIResourceSchema %s: %w", ars.Name, err)
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := e.c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating APIResourceSchema %s: %w", ars.Name, err)
	}
	return nil
}

// writeExport lists pub's schema and claims in the export, creating it
// when missing; claims other graphs added stay.
func (e *exporter) writeExport(ctx context.Context, export *unstructured.Unstructured, pub publication) error {
	create := export == nil
	if create {
		export = &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		export.SetGroupVersionKind(apiExportGVK)
		export.SetName(e.name)
	}
	changed := setResource(export, pub)
	changed = addClaims(export, pub.Claims) || changed
	var err error
	switch {
	case create:
		err = e.c.Create(ctx, export)
	case changed:
		err = e.c.Update(ctx, export)
	}
	if err != nil {
		return fmt.Errorf("writing APIExport %s: %w", e.name, err)
	}
	return nil
}

// listedSchema returns the schema the export lists for gr, or "".
func listedSchema(export *unstructured.Unstructured, gr schema.GroupResource) string {
	if export == nil {
		return ""
	}
	resources, _, _ := unstructured.NestedSlice(export.Object, "spec", "resources")
	for _, r := range resources {
		m, _ := r.(map[string]any)
		if m["group"] == gr.Group && m["name"] == gr.Resource {
			s, _ := m["schema"].(string)
			return s
		}
	}
	return ""
}

func setResource(export *unstructured.Unstructured, pub publication) bool {
	resources, _, _ := unstructured.NestedSlice(export.Object, "spec", "resources")
	for _, r := range resources {
		m, _ := r.(map[string]any)
		if m["group"] == pub.Resource.Group && m["name"] == pub.Resource.Resource {
			if m["schema"] == pub.Schema {
				return false
			}
			m["schema"] = pub.Schema
			_ = unstructured.SetNestedSlice(export.Object, resources, "spec", "resources")
			return true
		}
	}
	resources = append(resources, map[string]any{
		"group": pub.Resource.Group, "name": pub.Resource.Resource, "schema": pub.Schema,
		"storage": map[string]any{"crd": map[string]any{}},
	})
	_ = unstructured.SetNestedSlice(export.Object, resources, "spec", "resources")
	return true
}

func addClaims(export *unstructured.Unstructured, claims []schema.GroupResource) bool {
	existing, _, _ := unstructured.NestedSlice(export.Object, "spec", "permissionClaims")
	have := map[schema.GroupResource]bool{}
	for _, c := range existing {
		m, _ := c.(map[string]any)
		g, _ := m["group"].(string)
		r, _ := m["resource"].(string)
		have[schema.GroupResource{Group: g, Resource: r}] = true
	}
	changed := false
	for _, gr := range claims {
		if have[gr] {
			continue
		}
		verbs := make([]any, len(ClaimVerbs))
		for i, v := range ClaimVerbs {
			verbs[i] = v
		}
		existing = append(existing, map[string]any{"group": gr.Group, "resource": gr.Resource, "verbs": verbs})
		changed = true
	}
	if changed {
		_ = unstructured.SetNestedSlice(export.Object, existing, "spec", "permissionClaims")
	}
	return changed
}

// schemaCRD turns an APIResourceSchema back into the CRD it describes, for
// the compatibility check.
func schemaCRD(ars *apisv1alpha1.APIResourceSchema) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Spec.Group, crd.Spec.Names, crd.Spec.Scope = ars.Spec.Group, ars.Spec.Names, ars.Spec.Scope
	for _, v := range ars.Spec.Versions {
		props, err := v.GetSchema()
		if err != nil {
			return nil, fmt.Errorf("decoding APIResourceSchema %s version %s: %w", ars.Name, v.Name, err)
		}
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v.Name, Served: v.Served, Storage: v.Storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props},
		})
	}
	return crd, nil
}
