// Package sample writes a sample instance of a graph's kind: every field
// that has a default, with that default, and every required field, with a
// value its schema accepts. It is what `fleetgraph generate instance`
// prints, so a person starts from an instance that applies as it is.
package sample

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Options say which instance to write.
type Options struct {
	// Name is metadata.name; it is also the value of required strings
	// without an enum. Defaults to "example".
	Name string
	// Namespace is metadata.namespace for a namespaced kind. Defaults to
	// "default".
	Namespace string
}

// Instance returns the sample instance of crd's storage version, as a
// YAML node whose fields carry comments saying what each is (required,
// default, type, bounds), and as a plain object.
func Instance(crd *apiextensionsv1.CustomResourceDefinition, opts Options) (*yamlv3.Node, map[string]any, error) {
	if opts.Name == "" {
		opts.Name = "example"
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	var version *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Storage {
			version = &crd.Spec.Versions[i]
		}
	}
	if version == nil || version.Schema == nil || version.Schema.OpenAPIV3Schema == nil {
		return nil, nil, fmt.Errorf("CRD %s has no schema to follow", crd.Name)
	}
	root := version.Schema.OpenAPIV3Schema
	meta := mapping()
	add(meta, "name", scalar(opts.Name), "")
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		add(meta, "namespace", scalar(opts.Namespace), "")
	}
	doc := mapping()
	add(doc, "apiVersion", scalar(crd.Spec.Group+"/"+version.Name), "")
	add(doc, "kind", scalar(crd.Spec.Names.Kind), "")
	add(doc, "metadata", meta, "")
	if spec, ok := root.Properties["spec"]; ok {
		s := &sampler{name: opts.Name}
		node := s.object(spec)
		if node == nil {
			node = mapping()
		}
		add(doc, "spec", node, "")
	}
	var obj map[string]any
	if err := doc.Decode(&obj); err != nil {
		return nil, nil, err
	}
	return doc, obj, nil
}

type sampler struct{ name string }

// object fills an object's required fields and those with defaults, on
// top of the object's own default (as the API server defaults an absent
// object, then its fields); nil when there is nothing to write.
func (s *sampler) object(p apiextensionsv1.JSONSchemaProps) *yamlv3.Node {
	n := mapping()
	if p.Default != nil {
		n = fromJSON(p.Default.Raw)
		if n.Kind != yamlv3.MappingNode {
			return n
		}
		n.Style = 0
	}
	keys := make([]string, 0, len(p.Properties))
	for k := range p.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		child := p.Properties[k]
		required := slices.Contains(p.Required, k)
		if v := valueOf(n, k); v != nil {
			if child.Type == "object" && v.Kind == yamlv3.MappingNode {
				s.fill(v, child) // the object's default set it: default its fields
			}
			continue
		}
		v := s.value(child, required)
		if v == nil {
			continue
		}
		add(n, k, v, comment(child, required))
	}
	if len(n.Content) == 0 {
		if p.Default != nil {
			return n // the default is {}: written, as the server writes it
		}
		return nil
	}
	return n
}

// fill adds to m, an object a default gave, the fields of p it lacks.
func (s *sampler) fill(m *yamlv3.Node, p apiextensionsv1.JSONSchemaProps) {
	p.Default = &apiextensionsv1.JSON{Raw: []byte("{}")}
	full := s.object(p)
	for i := 0; i+1 < len(full.Content); i += 2 {
		if valueOf(m, full.Content[i].Value) == nil {
			m.Content = append(m.Content, full.Content[i], full.Content[i+1])
		}
	}
}

// valueOf is the value of key in mapping m, or nil.
func valueOf(m *yamlv3.Node, key string) *yamlv3.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// value is a field's sample: its default, or, when required, a value its
// schema accepts (a string matching its pattern, a number within its
// bounds); nil for an optional field without default. Validation rules
// (CEL) are not solved: the comment shows them.
func (s *sampler) value(p apiextensionsv1.JSONSchemaProps, required bool) *yamlv3.Node {
	if p.Default != nil && p.Type != "object" {
		return fromJSON(p.Default.Raw)
	}
	switch p.Type {
	case "object":
		if n := s.object(p); n != nil || !required {
			return n
		}
		return mapping()
	case "array":
		if !required {
			return nil
		}
		seq := &yamlv3.Node{Kind: yamlv3.SequenceNode, Style: yamlv3.FlowStyle}
		if p.MinItems != nil && *p.MinItems > 0 && p.Items != nil && p.Items.Schema != nil {
			for range *p.MinItems {
				if v := s.value(*p.Items.Schema, true); v != nil {
					seq.Content = append(seq.Content, v)
				}
			}
		}
		return seq
	}
	if !required {
		return nil
	}
	return s.scalarFor(p)
}

func (s *sampler) scalarFor(p apiextensionsv1.JSONSchemaProps) *yamlv3.Node {
	if len(p.Enum) > 0 {
		return fromJSON(p.Enum[0].Raw)
	}
	switch p.Type {
	case "integer", "number":
		v := 1.0
		if p.Minimum != nil {
			v = math.Max(v, *p.Minimum)
			if p.ExclusiveMinimum {
				v = math.Floor(*p.Minimum) + 1
			}
		}
		if p.Maximum != nil && v > *p.Maximum {
			v = *p.Maximum
		}
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!int", Value: fmt.Sprint(int64(v))}
	case "boolean":
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!bool", Value: "false"}
	}
	v := s.name
	if p.MinLength != nil {
		for int64(len(v)) < *p.MinLength {
			v += "x"
		}
	}
	if p.MaxLength != nil && int64(len(v)) > *p.MaxLength {
		v = v[:*p.MaxLength]
	}
	if p.Pattern != "" {
		if m, ok := matching(p.Pattern, v); ok {
			v = m
		}
	}
	return scalar(v)
}

// comment says what a field is: "required integer, minimum 0".
func comment(p apiextensionsv1.JSONSchemaProps, required bool) string {
	var parts []string
	if required {
		parts = append(parts, "required")
	}
	typ := p.Type
	if typ == "" && p.XIntOrString {
		typ = "integer or string"
	}
	if typ != "" && typ != "object" {
		parts = append(parts, typ)
	}
	if p.Default != nil {
		parts = append(parts, "default "+string(p.Default.Raw))
	}
	if p.Minimum != nil {
		parts = append(parts, fmt.Sprintf("minimum %v", *p.Minimum))
	}
	if p.Maximum != nil {
		parts = append(parts, fmt.Sprintf("maximum %v", *p.Maximum))
	}
	if len(p.Enum) > 0 {
		var vals []string
		for _, e := range p.Enum {
			vals = append(vals, string(e.Raw))
		}
		parts = append(parts, "one of "+strings.Join(vals, ", "))
	}
	if p.Pattern != "" {
		parts = append(parts, "pattern "+p.Pattern)
	}
	for _, rule := range p.XValidations {
		parts = append(parts, "rule "+rule.Rule)
	}
	if p.Description != "" {
		parts = append(parts, p.Description)
	}
	return strings.Join(parts, "; ")
}

func mapping() *yamlv3.Node { return &yamlv3.Node{Kind: yamlv3.MappingNode} }

func scalar(v string) *yamlv3.Node {
	return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: v}
}

func add(m *yamlv3.Node, key string, v *yamlv3.Node, note string) {
	k := scalar(key)
	if note != "" {
		if v.Kind == yamlv3.ScalarNode || (v.Style&yamlv3.FlowStyle) != 0 {
			v.LineComment = note
		} else {
			k.LineComment = note
		}
	}
	m.Content = append(m.Content, k, v)
}

// fromJSON turns a default (JSON) into a YAML node.
func fromJSON(raw []byte) *yamlv3.Node {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return scalar(string(raw))
	}
	var n yamlv3.Node
	if err := n.Encode(v); err != nil {
		return scalar(string(raw))
	}
	if n.Kind == yamlv3.MappingNode || n.Kind == yamlv3.SequenceNode {
		n.Style = yamlv3.FlowStyle
	}
	return &n
}
