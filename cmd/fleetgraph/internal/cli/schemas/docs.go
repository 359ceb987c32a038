package schemas

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/client-go/openapi"
)

// Docs holds OpenAPI v3 documents by group-version path ("api/v1",
// "apis/apps/v1"), as an API server lists them under /openapi/v3. It is an
// openapi.Client: give it to resolver.New.
type Docs map[string][]byte

var _ openapi.Client = Docs{}

// Paths implements openapi.Client.
func (d Docs) Paths() (map[string]openapi.GroupVersion, error) {
	out := make(map[string]openapi.GroupVersion, len(d))
	for path, raw := range d {
		out[path] = doc{path: path, raw: raw}
	}
	return out, nil
}

// doc is one document, as an openapi.GroupVersion.
type doc struct {
	path string
	raw  []byte
}

func (d doc) Schema(contentType string) ([]byte, error) {
	if contentType != "application/json" {
		return nil, fmt.Errorf("schemas: only application/json is served, not %s", contentType)
	}
	return d.raw, nil
}

func (d doc) ServerRelativeURL() string { return "/openapi/v3/" + d.path }

// Kinds lists "group/version Kind" of every kind the documents describe,
// sorted: what a resolver over them knows.
func (d Docs) Kinds() ([]string, error) {
	var out []string
	for path, raw := range d {
		var body document
		if err := json.Unmarshal(raw, &body); err != nil {
			return nil, fmt.Errorf("decoding the OpenAPI document of %s: %w", path, err)
		}
		for _, s := range body.Components.Schemas {
			for _, gvk := range gvksOf(s) {
				out = append(out, gvk)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// document is the part of an OpenAPI v3 document the resolver reads.
type document struct {
	OpenAPI    string `json:"openapi,omitempty"`
	Components struct {
		Schemas map[string]map[string]any `json:"schemas"`
	} `json:"components"`
	Paths map[string]map[string]any `json:"paths,omitempty"`
}

func gvksOf(s map[string]any) []string {
	list, _ := s["x-kubernetes-group-version-kind"].([]any)
	var out []string
	for _, item := range list {
		m, _ := item.(map[string]any)
		g, _ := m["group"].(string)
		v, _ := m["version"].(string)
		k, _ := m["kind"].(string)
		gv := v
		if g != "" {
			gv = g + "/" + v
		}
		out = append(out, gv+" "+k)
	}
	return out
}

// Merge returns the documents of d and other together; two documents of
// one group-version (a CRD in a group the other set also serves) become
// one, their schemas and paths joined.
func (d Docs) Merge(other Docs) (Docs, error) {
	out := maps.Clone(d)
	if out == nil {
		out = Docs{}
	}
	for path, raw := range other {
		mine, ok := out[path]
		if !ok {
			out[path] = raw
			continue
		}
		joined, err := join(mine, raw)
		if err != nil {
			return nil, fmt.Errorf("merging the OpenAPI documents of %s: %w", path, err)
		}
		out[path] = joined
	}
	return out, nil
}

func join(a, b []byte) ([]byte, error) {
	var da, db document
	if err := json.Unmarshal(a, &da); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &db); err != nil {
		return nil, err
	}
	if da.Components.Schemas == nil {
		da.Components.Schemas = map[string]map[string]any{}
	}
	maps.Copy(da.Components.Schemas, db.Components.Schemas)
	if da.Paths == nil {
		da.Paths = map[string]map[string]any{}
	}
	maps.Copy(da.Paths, db.Paths)
	return json.Marshal(da)
}

// Strip returns an OpenAPI v3 document without what type-checking does not
// read: descriptions and examples of schemas, and every path operation but
// one per kind, kept only to tell whether the kind is namespaced.
func Strip(raw []byte) ([]byte, error) {
	var d document
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("decoding an OpenAPI document: %w", err)
	}
	for _, s := range d.Components.Schemas {
		stripSchema(s)
	}
	d.Paths = kindPaths(d.Paths)
	return json.Marshal(d)
}

func stripSchema(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if _, ok := m["description"].(string); ok {
		delete(m, "description")
	}
	delete(m, "example")
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			stripSchema(p)
		}
	}
	stripSchema(m["items"])
	stripSchema(m["additionalProperties"])
	stripSchema(m["not"])
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := m[key].([]any)
		for _, item := range list {
			stripSchema(item)
		}
	}
}

// kindPaths keeps one operation per kind: under a path with a {namespace}
// parameter when the kind has one (the resolver reads scope from it).
func kindPaths(paths map[string]map[string]any) map[string]map[string]any {
	chosen := map[string]string{} // gvk key -> path
	gvks := map[string]any{}
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		for _, op := range paths[path] {
			m, _ := op.(map[string]any)
			gvk, ok := m["x-kubernetes-group-version-kind"]
			if !ok {
				continue
			}
			raw, _ := json.Marshal(gvk)
			key := string(raw)
			cur, seen := chosen[key]
			if !seen || (!strings.Contains(cur, "{namespace}") && strings.Contains(path, "{namespace}")) {
				chosen[key], gvks[key] = path, gvk
			}
		}
	}
	out := map[string]map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(chosen)) {
		path := chosen[key]
		for n := 2; out[path] != nil; n++ {
			path = fmt.Sprintf("%s#%d", chosen[key], n) // another kind's operation on the same path
		}
		out[path] = map[string]any{"get": map[string]any{"x-kubernetes-group-version-kind": gvks[key]}}
	}
	return out
}
