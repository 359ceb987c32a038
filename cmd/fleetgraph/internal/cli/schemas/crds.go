package schemas

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/input"
)

// FromCRDs returns the OpenAPI v3 documents an API server publishes for
// crds, one per served group-version, as far as type-checking reads them:
// each version's structural schema (as the API server unfolds it), with
// apiVersion, kind and metadata added as the API server adds them (also
// to embedded resources), and one path that tells the kind's scope.
// metadata refers to the built-in ObjectMeta schema, copied in.
func FromCRDs(crds []*apiextensionsv1.CustomResourceDefinition) (Docs, error) {
	meta, err := metaComponents()
	if err != nil {
		return nil, err
	}
	out := Docs{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			raw, err := crdDocument(crd, v, meta)
			if err != nil {
				return nil, fmt.Errorf("CRD %s, version %s: %w", crd.Name, v.Name, err)
			}
			if out, err = out.Merge(Docs{"apis/" + crd.Spec.Group + "/" + v.Name: raw}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

const objectMetaRef = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

// metaComponents are the built-in schemas of package meta/v1 (ObjectMeta
// and what it refers to), from the snapshot of api/v1.
func metaComponents() (map[string]map[string]any, error) {
	b, err := Builtin()
	if err != nil {
		return nil, err
	}
	var d document
	if err := json.Unmarshal(b["api/v1"], &d); err != nil {
		return nil, fmt.Errorf("reading the built-in ObjectMeta schema: %w", err)
	}
	out := map[string]map[string]any{}
	for name, s := range d.Components.Schemas {
		if strings.HasPrefix(name, "io.k8s.apimachinery.pkg.apis.meta.v1.") {
			out[name] = s
		}
	}
	return out, nil
}

func crdDocument(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, meta map[string]map[string]any) ([]byte, error) {
	s, err := kubeNative(v.Schema)
	if err != nil {
		return nil, err
	}
	g, names := crd.Spec.Group, crd.Spec.Names
	s.AddExtension("x-kubernetes-group-version-kind", []any{map[string]any{"group": g, "version": v.Name, "kind": names.Kind}})
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var kind map[string]any
	if err := json.Unmarshal(raw, &kind); err != nil {
		return nil, err
	}
	var d document
	d.OpenAPI = "3.0.0"
	d.Components.Schemas = maps.Clone(meta)
	d.Components.Schemas[g+"."+v.Name+"."+names.Kind] = kind
	path := "/apis/" + g + "/" + v.Name + "/" + names.Plural + "/{name}"
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		path = "/apis/" + g + "/" + v.Name + "/namespaces/{namespace}/" + names.Plural + "/{name}"
	}
	d.Paths = map[string]map[string]any{path: {"get": map[string]any{"x-kubernetes-group-version-kind": map[string]any{"group": g, "version": v.Name, "kind": names.Kind}}}}
	return json.Marshal(d)
}

// kubeNative is a version's schema as the API server publishes it: the
// structural schema, unfolded, with type and object metadata.
func kubeNative(v *apiextensionsv1.CustomResourceValidation) (*spec.Schema, error) {
	if v == nil || v.OpenAPIV3Schema == nil {
		return &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}, nil
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, err
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("not a structural schema: %w", err)
	}
	s := ss.Unfold().ToKubeOpenAPI()
	addTypeMeta(s)
	addEmbedded(s)
	return s, nil
}

func addTypeMeta(s *spec.Schema) {
	s.SetProperty("apiVersion", *spec.StringProperty())
	s.SetProperty("kind", *spec.StringProperty())
	s.SetProperty("metadata", *spec.RefSchema(objectMetaRef))
}

// addEmbedded gives every x-kubernetes-embedded-resource object its type
// and object metadata, as the API server does.
func addEmbedded(s *spec.Schema) {
	if s == nil {
		return
	}
	for k, p := range s.Properties {
		addEmbedded(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		addEmbedded(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		addEmbedded(s.AdditionalProperties.Schema)
	}
	if embedded, ok := s.Extensions.GetBool("x-kubernetes-embedded-resource"); ok && embedded {
		addTypeMeta(s)
		for _, f := range []string{"kind", "apiVersion"} {
			if !slices.Contains(s.Required, f) {
				s.Required = append(s.Required, f)
			}
		}
	}
}

// ReadCRDs reads the CustomResourceDefinitions in the named files and, for
// a directory, in its .yaml, .yml and .json files, recursively, within the
// bounds o sets (package input). Documents of other kinds are skipped; an
// unreadable or malformed CRD is an error.
func ReadCRDs(o input.Options, paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	err := input.Walk(o, paths, IsManifest, func(name string, data []byte) error {
		crds, err := readCRDs(name, data)
		out = append(out, crds...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// IsManifest reports whether a file's name says it holds YAML or JSON.
func IsManifest(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readCRDs reads the CRDs of one file's content.
func readCRDs(path string, data []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := input.CheckStructure(fmt.Sprintf("%s: document %d", path, n), raw); err != nil {
			return nil, err
		}
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, n, err)
		}
		if head.Kind != "CustomResourceDefinition" || !strings.HasPrefix(head.APIVersion, "apiextensions.k8s.io/") {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, n, err)
		}
		out = append(out, crd)
	}
}
