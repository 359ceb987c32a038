package graph

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"

	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

// kroPrefixes start the labels and annotations kro v0.9.4 keeps for its
// own bookkeeping and persisted state.
var kroPrefixes = []string{"kro.run/", "internal.kro.run/"}

// templateChecker applies kro's rules to what one resource writes
// literally: the labels, annotations and CustomResourceDefinition templates
// it may not write, and the shape of its externalRef's label selector.
type templateChecker struct {
	r    *resource
	diag *diagnostics
}

// reservedMetadata refuses, as kro v0.9.4 does, a template that sets a
// label or an annotation in kro's own domains: kro writes those on every
// object it creates, so an RGD setting one works on neither.
func (tc templateChecker) reservedMetadata() {
	md, _ := tc.r.template["metadata"].(map[string]any)
	for _, field := range []string{"labels", "annotations"} {
		m, _ := md[field].(map[string]any)
		for _, key := range sortedKeys(m) {
			for _, prefix := range kroPrefixes {
				if strings.HasPrefix(key, prefix) {
					tc.fail("metadata."+field+"."+key, "%s starting with %q are kro's own: a template may not set them", field, prefix)
				}
			}
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
// does: one ${} expression as a whole (its type is checked when it is
// compiled), or an object with matchLabels (strings, or one expression)
// and matchExpressions (key, operator and values, all strings, or one
// expression), whose strings may hold expressions. A selector with no
// expression at all is validated as the API server validates a
// LabelSelector.
func (tc templateChecker) selector() {
	const path = "externalRef.metadata.selector"
	switch sel := tc.r.selector.(type) {
	case string:
		if _, ok, _ := expr.Standalone(sel); ok {
			return
		}
		tc.fail(path, "must be a label selector (matchLabels, matchExpressions) or one ${} expression, not %s", describeLiteral(sel))
	case map[string]any:
		for _, key := range sortedKeys(sel) {
			p := path + "." + key
			if s, ok := sel[key].(string); ok {
				if _, whole, _ := expr.Standalone(s); whole {
					continue
				}
			}
			switch key {
			case "matchLabels":
				tc.stringMap(p, sel[key])
			case "matchExpressions":
				tc.requirements(p, sel[key])
			default:
				tc.fail(p, "unknown field %q of a label selector (matchLabels, matchExpressions)", key)
			}
		}
		tc.literalSelector(path, sel)
	case nil:
	default:
		tc.fail(path, "must be a label selector (matchLabels, matchExpressions), not %s %v", describeLiteral(sel), sel)
	}
}

// literalSelector validates a selector without expressions as the API
// server would (operators, values that fit them, label keys and values),
// as kro v0.9.4 does when the RGD is admitted.
func (tc templateChecker) literalSelector(path string, sel map[string]any) {
	raw, err := json.Marshal(sel)
	if err != nil || strings.Contains(string(raw), "${") {
		return
	}
	var ls metav1.LabelSelector
	if err := json.Unmarshal(raw, &ls); err != nil {
		return // the shape checks above say what is wrong
	}
	if errs := metav1validation.ValidateLabelSelector(&ls, metav1validation.LabelSelectorValidationOptions{}, nil); len(errs) > 0 {
		tc.fail(path, "invalid label selector: %v", errs.ToAggregate())
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
