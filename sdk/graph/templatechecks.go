package graph

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

// kroLabelPrefix starts the labels kro keeps for its own bookkeeping.
const kroLabelPrefix = "kro.run/"

// checkReservedLabels refuses, as kro does, a template that sets a label
// in kro's own domain: kro writes those on every object it creates, so an
// RGD setting one works on neither.
func (c *compiler) checkReservedLabels(r *resource) {
	md, _ := r.template["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	for _, key := range sortedKeys(labels) {
		if strings.HasPrefix(key, kroLabelPrefix) {
			c.fail(&Error{ResourceID: r.node.ID, Path: "metadata.labels." + key, Err: errorf(ErrInvalid,
				"labels starting with %q are kro's own: a template may not set them", kroLabelPrefix)})
		}
	}
}

// checkCRDTemplate refuses, as kro does, expressions outside metadata in a
// CustomResourceDefinition template: a CRD's schema is not a value to
// compute, and kro reads such templates without a schema.
func (c *compiler) checkCRDTemplate(r *resource) {
	gvk := r.node.GVK
	if gvk.Group != "apiextensions.k8s.io" || gvk.Version != "v1" || gvk.Kind != "CustomResourceDefinition" {
		return
	}
	for _, key := range sortedKeys(r.template) {
		if key != "metadata" {
			c.noExpressions(r, key, r.template[key])
		}
	}
}

func (c *compiler) noExpressions(r *resource, path string, v any) {
	switch v := v.(type) {
	case string:
		if expr.HasExpr(v) {
			c.fail(&Error{ResourceID: r.node.ID, Path: path, Expression: v, Err: errorf(ErrInvalid,
				"a CustomResourceDefinition template may use expressions only in metadata")})
		}
	case map[string]any:
		for _, key := range sortedKeys(v) {
			c.noExpressions(r, joinPath(path, key), v[key])
		}
	case []any:
		for i, item := range v {
			c.noExpressions(r, fmt.Sprintf("%s[%d]", path, i), item)
		}
	}
}

// checkSelector checks an externalRef's label selector as kro's
// ResourceGraphDefinition CRD does when the RGD is admitted: an object with
// matchLabels (strings) and matchExpressions (key, operator and values, all
// strings), which may contain ${} expressions. A selector that is one
// ${} expression as a whole is a fleetgraph extension.
func (c *compiler) checkSelector(r *resource) {
	const path = "externalRef.metadata.selector"
	fail := func(p, format string, args ...any) {
		c.fail(&Error{ResourceID: r.node.ID, Path: p, Err: errorf(ErrInvalid, format, args...)})
	}
	switch sel := r.selector.(type) {
	case string:
		if _, ok, _ := expr.Standalone(sel); ok {
			c.extension(r.node.ID, path, "a label selector computed by one expression")
			return
		}
		fail(path, "must be a label selector (matchLabels, matchExpressions) or one ${} expression")
	case map[string]any:
		for _, key := range sortedKeys(sel) {
			p := path + "." + key
			switch key {
			case "matchLabels":
				c.checkStringMap(r, p, sel[key])
			case "matchExpressions":
				c.checkRequirements(r, p, sel[key])
			default:
				fail(p, "unknown field %q of a label selector (matchLabels, matchExpressions)", key)
			}
		}
	case nil:
	default:
		fail(path, "must be a label selector (matchLabels, matchExpressions)")
	}
}

func (c *compiler) checkRequirements(r *resource, path string, v any) {
	list, ok := v.([]any)
	if !ok {
		c.fail(&Error{ResourceID: r.node.ID, Path: path, Err: errorf(ErrInvalid, "%s where a list of {key, operator, values} belongs", describeLiteral(v))})
		return
	}
	for i, item := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		req, ok := item.(map[string]any)
		if !ok {
			c.fail(&Error{ResourceID: r.node.ID, Path: p, Err: errorf(ErrInvalid, "%s where a {key, operator, values} object belongs", describeLiteral(item))})
			continue
		}
		for _, field := range []string{"key", "operator"} {
			if _, set := req[field]; !set {
				c.fail(&Error{ResourceID: r.node.ID, Path: p + "." + field, Err: errorf(ErrInvalid, "required")})
			}
		}
		for _, key := range sortedKeys(req) {
			switch key {
			case "key", "operator":
				c.checkString(r, p+"."+key, req[key])
			case "values":
				c.checkStringList(r, p+"."+key, req[key])
			default:
				c.fail(&Error{ResourceID: r.node.ID, Path: p + "." + key, Err: errorf(ErrInvalid, "unknown field %q of a label selector requirement (key, operator, values)", key)})
			}
		}
	}
}

func (c *compiler) notString(r *resource, path string, v any) {
	c.fail(&Error{ResourceID: r.node.ID, Path: path, Err: errorf(ErrInvalid, "%s where a string belongs", describeLiteral(v))})
}

func (c *compiler) checkString(r *resource, path string, v any) {
	if _, ok := v.(string); !ok {
		c.notString(r, path, v)
	}
}

func (c *compiler) checkStringMap(r *resource, path string, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		c.fail(&Error{ResourceID: r.node.ID, Path: path, Err: errorf(ErrInvalid, "%s where a map of strings belongs", describeLiteral(v))})
		return
	}
	for _, key := range sortedKeys(m) {
		c.checkString(r, path+"."+key, m[key])
	}
}

func (c *compiler) checkStringList(r *resource, path string, v any) {
	l, ok := v.([]any)
	if !ok {
		c.fail(&Error{ResourceID: r.node.ID, Path: path, Err: errorf(ErrInvalid, "%s where a list of strings belongs", describeLiteral(v))})
		return
	}
	for i, item := range l {
		c.checkString(r, fmt.Sprintf("%s[%d]", path, i), item)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
