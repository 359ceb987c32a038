package graph

import (
	"fmt"
	"strings"

	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

// kroLabelPrefix starts the labels kro keeps for its own bookkeeping.
const kroLabelPrefix = "kro.run/"

// templateChecker applies kro's rules to what one resource writes
// literally: the labels and the CustomResourceDefinition templates it may
// not write, and the shape of its externalRef's label selector.
type templateChecker struct {
	r    *resource
	diag *diagnostics
}

// reservedLabels refuses, as kro does, a template that sets a label
// in kro's own domain: kro writes those on every object it creates, so an
// RGD setting one works on neither.
func (tc templateChecker) reservedLabels() {
	md, _ := tc.r.template["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	for _, key := range sortedKeys(labels) {
		if strings.HasPrefix(key, kroLabelPrefix) {
			tc.fail("metadata.labels."+key, "labels starting with %q are kro's own: a template may not set them", kroLabelPrefix)
		}
	}
}

// crdTemplate refuses, as kro does, expressions outside metadata in a
// CustomResourceDefinition template: a CRD's schema is not a value to
// compute, and kro reads such templates without a schema.
func (tc templateChecker) crdTemplate() {
	gvk := tc.r.node.GVK
	if gvk.Group != "apiextensions.k8s.io" || gvk.Version != "v1" || gvk.Kind != "CustomResourceDefinition" {
		return
	}
	for _, key := range sortedKeys(tc.r.template) {
		if key != "metadata" {
			tc.noExpressions(key, tc.r.template[key])
		}
	}
}

func (tc templateChecker) noExpressions(path string, v any) {
	switch v := v.(type) {
	case string:
		if expr.HasExpr(v) {
			tc.diag.fail(&Error{ResourceID: tc.r.node.ID, Path: path, Expression: v, Err: errorf(ErrInvalid,
				"a CustomResourceDefinition template may use expressions only in metadata")})
		}
	case map[string]any:
		for _, key := range sortedKeys(v) {
			tc.noExpressions(joinPath(path, key), v[key])
		}
	case []any:
		for i, item := range v {
			tc.noExpressions(fmt.Sprintf("%s[%d]", path, i), item)
		}
	}
}

// selector checks an externalRef's label selector as kro v0.9.4's builder
// does: an object with matchLabels (strings) and matchExpressions (key,
// operator and values, all strings), which may contain ${} expressions, or
// one ${} expression as a whole.
func (tc templateChecker) selector() {
	const path = "externalRef.metadata.selector"
	switch sel := tc.r.selector.(type) {
	case string:
		if _, ok, _ := expr.Standalone(sel); ok {
			return
		}
		tc.fail(path, "must be a label selector (matchLabels, matchExpressions) or one ${} expression")
	case map[string]any:
		for _, key := range sortedKeys(sel) {
			p := path + "." + key
			switch key {
			case "matchLabels":
				tc.stringMap(p, sel[key])
			case "matchExpressions":
				tc.requirements(p, sel[key])
			default:
				tc.fail(p, "unknown field %q of a label selector (matchLabels, matchExpressions)", key)
			}
		}
	case nil:
	default:
		tc.fail(path, "must be a label selector (matchLabels, matchExpressions)")
	}
}

func (tc templateChecker) requirements(path string, v any) {
	list, ok := v.([]any)
	if !ok {
		tc.fail(path, "%s where a list of {key, operator, values} belongs", describeLiteral(v))
		return
	}
	for i, item := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		req, ok := item.(map[string]any)
		if !ok {
			tc.fail(p, "%s where a {key, operator, values} object belongs", describeLiteral(item))
			continue
		}
		for _, field := range []string{"key", "operator"} {
			if _, set := req[field]; !set {
				tc.fail(p+"."+field, "required")
			}
		}
		for _, key := range sortedKeys(req) {
			switch key {
			case "key", "operator":
				tc.stringField(p+"."+key, req[key])
			case "values":
				tc.stringList(p+"."+key, req[key])
			default:
				tc.fail(p+"."+key, "unknown field %q of a label selector requirement (key, operator, values)", key)
			}
		}
	}
}

func (tc templateChecker) stringField(path string, v any) {
	if _, ok := v.(string); !ok {
		tc.fail(path, "%s where a string belongs", describeLiteral(v))
	}
}

func (tc templateChecker) stringMap(path string, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		tc.fail(path, "%s where a map of strings belongs", describeLiteral(v))
		return
	}
	for _, key := range sortedKeys(m) {
		tc.stringField(path+"."+key, m[key])
	}
}

func (tc templateChecker) stringList(path string, v any) {
	l, ok := v.([]any)
	if !ok {
		tc.fail(path, "%s where a list of strings belongs", describeLiteral(v))
		return
	}
	for i, item := range l {
		tc.stringField(fmt.Sprintf("%s[%d]", path, i), item)
	}
}

// fail records an ErrInvalid error at path in the resource.
func (tc templateChecker) fail(path, format string, args ...any) {
	tc.diag.fail(&Error{ResourceID: tc.r.node.ID, Path: path, Err: errorf(ErrInvalid, format, args...)})
}
