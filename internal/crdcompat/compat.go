package crdcompat

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Breaks lists what replacing the CRD old with new could break in objects
// already stored or in clients already written against old: a removed
// version or property, a changed type or scope, a new required field
// without default, a narrowed enum, a changed pattern, a bound (minimum,
// maximum, minLength, maxLength, minItems, maxItems) added or tightened.
// Each break names its version and path, e.g.
//
//	v1alpha1: spec.port: type changed from integer to string
//
// It returns nil when the change is safe, and when either CRD is nil
// (nothing to compare).
func Breaks(old, new *apiextensionsv1.CustomResourceDefinition) []string {
	if old == nil || new == nil {
		return nil
	}
	var breaks []string
	if old.Spec.Scope != new.Spec.Scope {
		breaks = append(breaks, fmt.Sprintf("scope changed from %s to %s", old.Spec.Scope, new.Spec.Scope))
	}
	for _, ov := range old.Spec.Versions {
		i := slices.IndexFunc(new.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == ov.Name })
		if i < 0 {
			breaks = append(breaks, fmt.Sprintf("version %s removed", ov.Name))
			continue
		}
		d := &schemaDiff{prefix: ov.Name + ": "}
		d.compare("", versionSchema(ov), versionSchema(new.Spec.Versions[i]))
		breaks = append(breaks, d.breaks...)
	}
	return breaks
}

// Message is the one-line account of breaks that every caller shows:
// "breaking schema change: " and the breaks, separated by "; ".
func Message(breaks []string) string {
	return "breaking schema change: " + strings.Join(breaks, "; ")
}

func versionSchema(v apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.JSONSchemaProps {
	if v.Schema == nil {
		return nil
	}
	return v.Schema.OpenAPIV3Schema
}

type schemaDiff struct {
	prefix string
	breaks []string
}

func (d *schemaDiff) add(path, format string, args ...any) {
	if path == "" {
		path = "<root>"
	}
	d.breaks = append(d.breaks, d.prefix+path+": "+fmt.Sprintf(format, args...))
}

// compare walks old and new together. A nil old means "no constraint"; a
// nil new where old was set means the schema was dropped.
func (d *schemaDiff) compare(path string, old, new *apiextensionsv1.JSONSchemaProps) {
	if old == nil {
		return
	}
	if new == nil {
		d.add(path, "schema removed")
		return
	}
	if old.Type != new.Type && new.Type != "" && !preservesUnknown(new) {
		d.add(path, "type changed from %s to %s", typeOrAny(old.Type), typeOrAny(new.Type))
		return
	}
	d.compareConstraints(path, old, new)
	d.compareProperties(path, old, new)
	if old.Items != nil && new.Items != nil {
		d.compare(path+"[]", old.Items.Schema, new.Items.Schema)
	}
	if old.AdditionalProperties != nil && new.AdditionalProperties != nil {
		d.compare(path+"[*]", old.AdditionalProperties.Schema, new.AdditionalProperties.Schema)
	}
}

func (d *schemaDiff) compareConstraints(path string, old, new *apiextensionsv1.JSONSchemaProps) {
	d.compareBounds(path, old, new)
	if new.Pattern != "" && new.Pattern != old.Pattern {
		d.add(path, "pattern changed from %q to %q", old.Pattern, new.Pattern)
	}
	if len(new.Enum) > 0 {
		if missing := missingEnum(old.Enum, new.Enum); len(old.Enum) == 0 || len(missing) > 0 {
			d.add(path, "enum narrowed%s", describeMissing(missing))
		}
	}
}

func (d *schemaDiff) compareProperties(path string, old, new *apiextensionsv1.JSONSchemaProps) {
	names := make([]string, 0, len(old.Properties))
	for name := range old.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		o := old.Properties[name]
		n, ok := new.Properties[name]
		if !ok {
			if !preservesUnknown(new) {
				d.add(joinPath(path, name), "removed")
			}
			continue
		}
		d.compare(joinPath(path, name), &o, &n)
	}
	for _, name := range new.Required {
		if slices.Contains(old.Required, name) {
			continue
		}
		if p, ok := new.Properties[name]; ok && p.Default != nil {
			continue
		}
		d.add(joinPath(path, name), "new required field")
	}
}

func preservesUnknown(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

func typeOrAny(t string) string {
	if t == "" {
		return "any"
	}
	return t
}

// missingEnum returns the old enum values new no longer allows.
func missingEnum(old, new []apiextensionsv1.JSON) []string {
	var out []string
	for _, o := range old {
		if !slices.ContainsFunc(new, func(n apiextensionsv1.JSON) bool { return bytes.Equal(o.Raw, n.Raw) }) {
			out = append(out, string(o.Raw))
		}
	}
	return out
}

func describeMissing(missing []string) string {
	if len(missing) == 0 {
		return " (the field had no enum)"
	}
	return " (no longer allows " + strings.Join(missing, ", ") + ")"
}
