package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph/simpleschema"
)

var (
	kindPattern    = regexp.MustCompile(`^[A-Z][a-zA-Z0-9]{0,62}$`)
	versionPattern = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)
)

// instanceKind is the kind an RGD's instances are: spec.schema's header,
// its SimpleSchema converted to OpenAPI and to the CEL type expressions
// read as `schema`, and the CRD generated from them (crd.go, crdcheck.go).
type instanceKind struct {
	rgd    *v1alpha1.ResourceGraphDefinition
	limits Limits
	diag   *diagnostics

	// spec is spec.schema.spec as OpenAPI, nil when it could not be
	// decoded; decl is the CEL type of `schema` (dyn when the schema has
	// errors: Compile stops before expressions then).
	spec *apiextensionsv1.JSONSchemaProps
	decl *apiservercel.DeclType
}

func newInstanceKind(rgd *v1alpha1.ResourceGraphDefinition, limits Limits, diag *diagnostics) *instanceKind {
	return &instanceKind{rgd: rgd, limits: limits, diag: diag}
}

// checkHeader validates spec.schema's apiVersion, kind, group and scope.
func (k *instanceKind) checkHeader() {
	s := &k.rgd.Spec.Schema
	if !kindPattern.MatchString(s.Kind) {
		k.diag.fail(&Error{Path: "spec.schema.kind", Err: errorf(ErrInvalid, "kind %q must be UpperCamelCase (%s)", s.Kind, kindPattern)})
	}
	if !versionPattern.MatchString(s.APIVersion) {
		k.diag.fail(&Error{Path: "spec.schema.apiVersion", Err: errorf(ErrInvalid, "version %q must look like v1, v1alpha1 or v2beta3", s.APIVersion)})
	}
	if msgs := validation.IsDNS1123Subdomain(k.group()); len(msgs) > 0 || !strings.Contains(k.group(), ".") {
		k.diag.fail(&Error{Path: "spec.schema.group", Err: errorf(ErrInvalid, "group %q must be a DNS subdomain with at least one dot", k.group())})
	}
	switch s.Scope {
	case "", v1alpha1.ResourceScopeNamespaced, v1alpha1.ResourceScopeCluster:
	default:
		k.diag.fail(&Error{Path: "spec.schema.scope", Err: errorf(ErrInvalid, "scope %q must be Namespaced or Cluster", s.Scope)})
	}
}

func (k *instanceKind) group() string {
	if g := k.rgd.Spec.Schema.Group; g != "" {
		return g
	}
	return v1alpha1.DefaultGroup
}

func (k *instanceKind) namespaced() bool {
	return k.rgd.Spec.Schema.Scope != v1alpha1.ResourceScopeCluster
}

// parseSpec converts spec.schema.spec (and types) to OpenAPI and declares
// the CEL type of `schema`.
func (k *instanceKind) parseSpec() {
	s := &k.rgd.Spec.Schema
	obj, err := decodeObject(s.Spec.Raw)
	if err != nil {
		k.diag.fail(&Error{Path: "spec.schema.spec", Err: errorf(ErrSchema, "%v", err)})
		return
	}
	types, err := decodeObject(s.Types.Raw)
	if err != nil {
		k.diag.fail(&Error{Path: "spec.schema.types", Err: errorf(ErrSchema, "%v", err)})
		return
	}
	lim := k.limits
	bounds := simpleschema.Bounds{MaxProperties: lim.MaxSchemaProperties, MaxBytes: lim.MaxCRDBytes}
	res, err := bounds.Convert("", obj, types)
	out := res.Schema
	for _, e := range unjoin(err) {
		path := "spec.schema.spec"
		var pe *simpleschema.PathError
		if errors.As(e, &pe) {
			path = schemaPath(pe.Path)
			e = pe.Err
		}
		k.diag.fail(&Error{Path: path, Err: schemaError(e)})
	}
	for _, e := range res.Extensions {
		k.diag.extension("", schemaPath(e.Path), e.Feature)
	}
	for _, w := range res.Warnings {
		k.diag.warn(Warning{Path: schemaPath(w.Path), Message: w.Message})
	}
	k.spec = out
	if err != nil {
		k.decl = apiservercel.DynType // Compile stops before expressions
		return
	}
	k.decl = k.declType(out)
}

// schemaError is a SimpleSchema error as Compile reports it: a bound the
// schema passed names the Limits field that sets it.
func schemaError(e error) error {
	var be *simpleschema.BoundError
	if !errors.As(e, &be) {
		return errorf(ErrSchema, "%w", e)
	}
	field := map[string]string{"properties": "MaxSchemaProperties", "bytes": "MaxCRDBytes"}[be.Bound]
	if field == "" {
		return limitErrorf(ErrSchema, e, "%v (a CRD's schema cannot nest deeper)", e)
	}
	return limitErrorf(ErrSchema, e, "%v (Limits.%s)", e, field)
}

// schemaPath turns a simpleschema path into the RGD's.
func schemaPath(p string) string {
	if p == "" {
		return "spec.schema.spec"
	}
	if strings.HasPrefix(p, "types.") {
		return "spec.schema." + p
	}
	return "spec.schema.spec." + p
}

// declType is the CEL type of `schema`: apiVersion, kind, a typed
// metadata and the spec.
func (k *instanceKind) declType(specSchema *apiextensionsv1.JSONSchemaProps) *apiservercel.DeclType {
	if spec, ok := specSchemaOf(specSchema); ok {
		// The rest of the root is the same for every graph: converted once.
		s := *instanceRoot(k.namespaced())
		s.Properties = maps.Clone(s.Properties)
		s.Properties["spec"] = *spec
		return declTypeOf(&openapi.Schema{Schema: &s}, typeNamePrefix+"schema", 0)
	}
	root := &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   instanceMetaSchema(k.namespaced()),
			"spec":       *specSchema,
		},
	}
	s, err := toSpecSchema(root)
	if err != nil {
		k.diag.fail(&Error{Path: "spec.schema.spec", Err: errorf(ErrSchema, "%v", err)})
		return apiservercel.DynType
	}
	return declTypeOf(&openapi.Schema{Schema: s}, typeNamePrefix+"schema", 0)
}

// instanceMetaSchema is what expressions may read of the instance's
// metadata: a cluster-scoped instance has no namespace, so, as in kro,
// schema.metadata.namespace does not type-check.
func instanceMetaSchema(namespaced bool) apiextensionsv1.JSONSchemaProps {
	md := objectMetaSchema()
	if !namespaced {
		delete(md.Properties, "namespace")
	}
	return md
}

// instanceRoot is the instance's schema without spec, namespaced or not,
// converted once; it is shared and must not be modified.
func instanceRoot(namespaced bool) *spec.Schema {
	if namespaced {
		return namespacedRoot()
	}
	return clusterRoot()
}

var (
	namespacedRoot = sync.OnceValue(func() *spec.Schema { return convertInstanceRoot(true) })
	clusterRoot    = sync.OnceValue(func() *spec.Schema { return convertInstanceRoot(false) })
)

func convertInstanceRoot(namespaced bool) *spec.Schema {
	s, err := toSpecSchema(&apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   instanceMetaSchema(namespaced),
		},
	})
	if err != nil {
		panic(fmt.Sprintf("converting the instance's metadata schema: %v", err))
	}
	return s
}

// objectMetaSchema is what expressions may read of an object's metadata.
func objectMetaSchema() apiextensionsv1.JSONSchemaProps {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	strMap := apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}}
	return apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name": str, "namespace": str, "generateName": str, "uid": str, "resourceVersion": str,
			"generation":        {Type: "integer"},
			"creationTimestamp": str, "deletionTimestamp": str,
			"labels": strMap, "annotations": strMap,
			"finalizers":      {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
			"ownerReferences": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}},
		},
	}
}

// toSpecSchema converts a CRD schema to kube-openapi's type, which the CEL
// adapters read.
func toSpecSchema(s *apiextensionsv1.JSONSchemaProps) (*spec.Schema, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	out := &spec.Schema{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeObject decodes raw JSON that must be an object (or absent).
func decodeObject(raw []byte) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("must be an object: %w", err)
	}
	return obj, nil
}

// unjoin splits an errors.Join result.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func ptr[T any](v T) *T { return &v }
