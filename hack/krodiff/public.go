package krodiff

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// The public corpus is RGDs that people other than fleetgraph's and kro's
// authors wrote, in public repositories. Their files are not committed
// here (they are other people's, under their own licences): SourcesFile
// lists, for each, the repository, commit and path it comes from, and
// TestCompileAgainstKroOnPublicRGDs runs whatever copy of them the
// directory KRODIFF_PUBLIC_CORPUS holds (see the README of testdata).

// PublicCorpusEnv names the directory holding the public corpus: one file
// per source line, named as SourcesFile says.
const PublicCorpusEnv = "KRODIFF_PUBLIC_CORPUS"

// SourcesFile lists the public corpus: "owner/repo@commit:path file" per
// line, file being the name of its copy in the corpus directory.
const SourcesFile = "testdata/public-sources.txt"

// publicPrefix starts the names of the public corpus's RGDs.
const publicPrefix = "public/"

// Source is one file of the public corpus.
type Source struct {
	// Origin is "owner/repo@commit:path".
	Origin string
	// File is the name of its copy in the corpus directory.
	File string
}

// ReadSources reads SourcesFile.
func ReadSources(path string) ([]Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Source
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || !strings.Contains(fields[0], "@") || !strings.Contains(fields[0], ":") {
			return nil, fmt.Errorf("%s: %q: want \"owner/repo@commit:path file\"", path, line)
		}
		out = append(out, Source{Origin: fields[0], File: fields[1]})
	}
	return out, sc.Err()
}

// PublicRGD is one RGD of the public corpus.
type PublicRGD struct {
	// Name is "public/<file>", with "#n" for the n-th RGD of a file
	// holding several.
	Name   string
	Origin string
	Raw    []byte
}

// PublicRGDs reads the RGDs of the sources' copies in dir. A copy that is
// missing is an error: the directory must hold the whole list.
func PublicRGDs(dir string, sources []Source) ([]PublicRGD, error) {
	var out []PublicRGD
	for _, s := range sources {
		docs, err := rgdDocuments(filepath.Join(dir, s.File))
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", s.File, s.Origin, err)
		}
		for i, doc := range docs {
			name := publicPrefix + s.File
			if len(docs) > 1 {
				name += fmt.Sprintf("#%d", i+1)
			}
			out = append(out, PublicRGD{Name: name, Origin: s.Origin, Raw: doc})
		}
	}
	return out, nil
}

// rgdHead is what StubCRDs reads of an RGD.
type rgdHead struct {
	Spec struct {
		Schema struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Group      string `json:"group"`
			Scope      string `json:"scope"`
		} `json:"schema"`
		Resources []struct {
			Template    map[string]any `json:"template"`
			ExternalRef *struct {
				APIVersion string         `json:"apiVersion"`
				Kind       string         `json:"kind"`
				Metadata   map[string]any `json:"metadata"`
			} `json:"externalRef"`
		} `json:"resources"`
	} `json:"spec"`
}

// GeneratedKind is the kind an RGD's CRD serves, and whether the RGD
// could be read at all.
func GeneratedKind(raw []byte) (schema.GroupVersionKind, bool) {
	var h rgdHead
	if err := yaml.Unmarshal(raw, &h); err != nil || h.Spec.Schema.Kind == "" {
		return schema.GroupVersionKind{}, false
	}
	group := h.Spec.Schema.Group
	if group == "" {
		group = "kro.run"
	}
	return schema.GroupVersionKind{Group: group, Version: h.Spec.Schema.APIVersion, Kind: h.Spec.Schema.Kind}, true
}

// StubCRDs returns a CRD for every child kind (template or externalRef)
// the RGDs use that served does not know and that no RGD of the corpus
// generates itself, so that both compilers can resolve it: its objects
// keep any fields (both type them dynamically). A kind whose name starts
// with "Cluster", or that a cluster-scoped RGD writes without a
// namespace, is cluster-scoped; any other is namespaced.
func StubCRDs(rgds [][]byte, served func(schema.GroupVersionKind) bool) []*apiextensionsv1.CustomResourceDefinition {
	generated := map[schema.GroupKind]bool{}
	for _, raw := range rgds {
		if gvk, ok := GeneratedKind(raw); ok {
			generated[gvk.GroupKind()] = true
		}
	}
	type use struct {
		versions map[string]bool
		cluster  bool
	}
	uses := map[schema.GroupKind]*use{}
	note := func(apiVersion, kind string, namespaced bool, clusterInstance bool) {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil || gv.Group == "" || kind == "" || strings.Contains(apiVersion+kind, "${") {
			return // core kinds are served; malformed ones are the RGD's error
		}
		gk := schema.GroupKind{Group: gv.Group, Kind: kind}
		if generated[gk] || served(gv.WithKind(kind)) {
			return
		}
		u := uses[gk]
		if u == nil {
			u = &use{versions: map[string]bool{}}
			uses[gk] = u
		}
		u.versions[gv.Version] = true
		u.cluster = u.cluster || strings.HasPrefix(kind, "Cluster") || (clusterInstance && !namespaced)
	}
	childUses(rgds, note)
	var out []*apiextensionsv1.CustomResourceDefinition
	for gk, u := range uses {
		out = append(out, stubCRD(gk, u.versions, u.cluster))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func stubCRD(gk schema.GroupKind, versions map[string]bool, cluster bool) *apiextensionsv1.CustomResourceDefinition {
	plural := graph.Plural(gk.Kind)
	scope := apiextensionsv1.NamespaceScoped
	if cluster {
		scope = apiextensionsv1.ClusterScoped
	}
	keep := true
	open := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keep}
	crd := &apiextensionsv1.CustomResourceDefinition{
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gk.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: gk.Kind, ListKind: gk.Kind + "List", Plural: plural, Singular: strings.ToLower(gk.Kind)},
			Scope: scope,
		},
	}
	crd.Name = plural + "." + gk.Group
	if gk.Group == "k8s.io" || strings.HasSuffix(gk.Group, ".k8s.io") || strings.HasSuffix(gk.Group, ".kubernetes.io") {
		// A stand-in for a kind of a Kubernetes project (Gateway API...).
		crd.Annotations = map[string]string{"api-approved.kubernetes.io": "unapproved, a stub for a compile test"}
	}
	names := make([]string, 0, len(versions))
	for v := range versions {
		names = append(names, v)
	}
	sort.Strings(names)
	for i, v := range names {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"apiVersion": {Type: "string"}, "kind": {Type: "string"}, "metadata": {Type: "object"},
					"spec": open, "status": open,
				},
			}},
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		})
	}
	return crd
}

// childUses calls fn with each child kind (template or externalRef) the
// RGDs use, whether that use sets a namespace, and whether its RGD's
// instances are cluster-scoped.
func childUses(rgds [][]byte, fn func(apiVersion, kind string, namespaced, clusterInstance bool)) {
	for _, raw := range rgds {
		var h rgdHead
		if err := yaml.Unmarshal(raw, &h); err != nil {
			continue
		}
		clusterInstance := h.Spec.Schema.Scope == "Cluster"
		for _, r := range h.Spec.Resources {
			if r.Template != nil {
				u := unstructured.Unstructured{Object: r.Template}
				fn(u.GetAPIVersion(), u.GetKind(), u.GetNamespace() != "", clusterInstance)
			}
			if ref := r.ExternalRef; ref != nil {
				_, hasNS := ref.Metadata["namespace"]
				fn(ref.APIVersion, ref.Kind, hasNS, clusterInstance)
			}
		}
	}
}

// UsedKinds are the kinds the RGDs' templates and externalRefs name.
func UsedKinds(rgds [][]byte) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	childUses(rgds, func(apiVersion, kind string, _, _ bool) {
		if gv, err := schema.ParseGroupVersion(apiVersion); err == nil {
			out[gv.WithKind(kind).GroupKind()] = true
		}
	})
	return out
}
