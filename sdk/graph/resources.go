package graph

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

var idPattern = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// reservedWords may not be resource ids or iterator names: the variables
// expressions already use, CEL's reserved words, and the words kro reserves
// (kept identical so that an RGD valid here is valid in kro).
var reservedWords = sets.New(
	// CEL
	"true", "false", "null", "in", "as", "break", "const", "continue", "else",
	"for", "function", "if", "import", "let", "loop", "package", "namespace",
	"return", "var", "void", "while",
	// kro
	"apiVersion", "context", "dependency", "dependencies", "each", "externalRef",
	"externalReference", "externalRefs", "externalReferences", "graph", "instance", "item", "items", "kind", "kro", "metadata",
	"object", "resource", "resourcegraphdefinition", "resourceGraphDefinition",
	"resources", "root", "runtime", "schema", "self", "serviceAccountName",
	"spec", "status", "this", "variables", "vars", "version",
)

// IsReserved reports whether word may not be used as a resource id or a
// forEach iterator name.
func IsReserved(word string) bool { return reservedWords.Has(word) }

// resource is one spec.resources entry while compiling.
type resource struct {
	node      *Node
	src       *v1alpha1.Resource
	template  map[string]any
	selector  any // decoded externalRef.metadata.selector, nil if none
	iterators []iterator
	// schema is the kind's OpenAPI schema; nil when the kind is typed dyn.
	schema *spec.Schema
	// decl is the CEL type of one object of the kind.
	decl *apiservercel.DeclType
	deps sets.Set[string]
}

type iterator struct {
	name, written, src string
	path               string
}

// resourceParser validates the structure of spec.resources and turns
// each entry with a valid id into a resource.
type resourceParser struct {
	rgd  *v1alpha1.ResourceGraphDefinition
	diag *diagnostics

	list []*resource
	byID map[string]*resource
}

// parseResources validates the structure of spec.resources; it returns
// the entries with a valid id, in order and by id.
func parseResources(rgd *v1alpha1.ResourceGraphDefinition, diag *diagnostics) ([]*resource, map[string]*resource) {
	p := &resourceParser{rgd: rgd, diag: diag, byID: map[string]*resource{}}
	for i := range rgd.Spec.Resources {
		src := &rgd.Spec.Resources[i]
		r := &resource{src: src, node: &Node{ID: src.ID, Index: i}, deps: sets.New[string]()}
		if !p.checkID(src.ID, i) {
			continue
		}
		p.list = append(p.list, r)
		p.byID[src.ID] = r
		if src.ExternalRef != nil {
			p.parseExternalRef(r)
		} else {
			p.parseTemplate(r)
		}
		p.parseForEach(r)
	}
	return p.list, p.byID
}

func (p *resourceParser) checkID(id string, i int) bool {
	fail := func(format string, args ...any) bool {
		p.diag.fail(&Error{ResourceID: id, Path: fmt.Sprintf("spec.resources[%d].id", i), Err: errorf(ErrInvalid, format, args...)})
		return false
	}
	switch {
	case id == "":
		return fail("id is required")
	case !idPattern.MatchString(id):
		return fail("id %q must be lowerCamelCase (letters and digits, starting with a lowercase letter)", id)
	case reservedWords.Has(id):
		return fail("id %q is a reserved word", id)
	case p.byID[id] != nil:
		return fail("duplicate id %q", id)
	}
	if reservedNext.Has(id) {
		p.diag.warn(Warning{ResourceID: id, Path: fmt.Sprintf("spec.resources[%d].id", i),
			Message: fmt.Sprintf("id %q is reserved from kro v0.10: rename the resource before moving to it", id)})
	}
	return true
}

// reservedNext are ids kro v0.9.4 accepts and kro v0.10.0 reserves: they
// are served, with a Graph.Warnings entry.
var reservedNext = sets.New("graphengine")

func (p *resourceParser) parseTemplate(r *resource) {
	fail := func(path, format string, args ...any) {
		p.diag.fail(&Error{ResourceID: r.node.ID, Path: path, Err: errorf(ErrInvalid, format, args...)})
	}
	if len(r.src.Template.Raw) == 0 || string(r.src.Template.Raw) == "null" {
		fail("template", "exactly one of template and externalRef is required")
		return
	}
	if err := json.Unmarshal(r.src.Template.Raw, &r.template); err != nil || r.template == nil {
		fail("template", "must be an object")
		return
	}
	apiVersion, okV := literalString(r.template["apiVersion"])
	kind, okK := literalString(r.template["kind"])
	if !okV {
		fail("apiVersion", "required, and must be a plain string without ${}%s", got(r.template, "apiVersion"))
	}
	if !okK {
		fail("kind", "required, and must be a plain string without ${}%s", got(r.template, "kind"))
	}
	if _, ok := r.template["metadata"].(map[string]any); !ok {
		fail("metadata", "required, and must be an object%s", got(r.template, "metadata"))
	}
	if okV && okK {
		r.node.GVK = p.gvk(r, apiVersion, kind, "apiVersion")
	}
	checks := templateChecker{r: r, diag: p.diag}
	checks.reservedMetadata()
	checks.crdTemplate()
}

func (p *resourceParser) parseExternalRef(r *resource) {
	ref := r.src.ExternalRef
	fail := func(path, format string, args ...any) {
		p.diag.fail(&Error{ResourceID: r.node.ID, Path: path, Err: errorf(ErrInvalid, format, args...)})
	}
	r.node.External = true
	if len(r.src.Template.Raw) > 0 && string(r.src.Template.Raw) != "null" {
		fail("template", "exactly one of template and externalRef is allowed")
	}
	if len(r.src.ForEach) > 0 {
		fail("forEach", "an externalRef cannot have forEach; use metadata.selector to read many objects")
	}
	if ref.APIVersion == "" || expr.HasExpr(ref.APIVersion) {
		fail("externalRef.apiVersion", "required, and must be a plain string without ${}")
	}
	if ref.Kind == "" || expr.HasExpr(ref.Kind) {
		fail("externalRef.kind", "required, and must be a plain string without ${}")
	}
	hasSelector := ref.Metadata.HasSelector()
	// As in kro v0.9.4, a blank name is no name.
	if (strings.TrimSpace(ref.Metadata.Name) != "") == hasSelector {
		fail("externalRef.metadata", "exactly one of name and selector is required")
	}
	if hasSelector {
		if err := json.Unmarshal(ref.Metadata.Selector.Raw, &r.selector); err != nil {
			fail("externalRef.metadata.selector", "must be a label selector or a ${} expression")
		}
		templateChecker{r: r, diag: p.diag}.selector()
		r.node.Collection = true
	}
	if ref.APIVersion != "" && ref.Kind != "" {
		r.node.GVK = p.gvk(r, ref.APIVersion, ref.Kind, "externalRef.apiVersion")
	}
}

func (p *resourceParser) gvk(r *resource, apiVersion, kind, path string) schema.GroupVersionKind {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Version == "" {
		p.diag.fail(&Error{ResourceID: r.node.ID, Path: path, Err: errorf(ErrInvalid, "invalid apiVersion %q", apiVersion)})
	}
	return gv.WithKind(kind)
}

func (p *resourceParser) parseForEach(r *resource) {
	if len(r.src.ForEach) > MaxIterators {
		p.diag.fail(&Error{ResourceID: r.node.ID, Path: "forEach", Err: errorf(ErrInvalid, "at most %d iterators, got %d", MaxIterators, len(r.src.ForEach))})
		return
	}
	seen := sets.New[string]()
	for i, dim := range r.src.ForEach {
		if len(dim) != 1 {
			p.diag.fail(&Error{ResourceID: r.node.ID, Path: fmt.Sprintf("forEach[%d]", i), Err: errorf(ErrInvalid, "each entry must bind exactly one iterator, got %d", len(dim))})
			continue
		}
		for name, written := range dim {
			it := iterator{name: name, written: written, path: fmt.Sprintf("forEach[%d].%s", i, name)}
			if src, ok := p.checkIterator(r, it, seen); ok {
				it.src = src
				r.iterators = append(r.iterators, it)
			}
		}
	}
	r.node.Collection = r.node.Collection || len(r.iterators) > 0
}

// checkIterator validates an iterator and returns its expression's source.
func (p *resourceParser) checkIterator(r *resource, it iterator, seen sets.Set[string]) (string, bool) {
	fail := func(kind error, format string, args ...any) (string, bool) {
		p.diag.fail(&Error{ResourceID: r.node.ID, Path: it.path, Expression: it.written, Err: errorf(kind, format, args...)})
		return "", false
	}
	switch {
	case !idPattern.MatchString(it.name):
		return fail(ErrInvalid, "iterator name %q must be lowerCamelCase", it.name)
	case reservedWords.Has(it.name):
		return fail(ErrInvalid, "iterator name %q is a reserved word", it.name)
	case p.isResourceID(it.name):
		return fail(ErrInvalid, "iterator name %q is also a resource id", it.name)
	case seen.Has(it.name):
		return fail(ErrInvalid, "duplicate iterator %q", it.name)
	}
	seen.Insert(it.name)
	src, ok, err := expr.Standalone(it.written)
	if err != nil {
		return fail(ErrExpression, "%v", err)
	}
	if !ok {
		return fail(ErrExpression, "must be a single ${} expression returning a list")
	}
	return src, true
}

// isResourceID reports whether id names any entry of spec.resources, even
// one that failed validation.
func (p *resourceParser) isResourceID(id string) bool {
	for _, res := range p.rgd.Spec.Resources {
		if res.ID == id {
			return true
		}
	}
	return false
}

// got describes obj[key] for a message (", got the number 1"), or "" when
// it is absent.
func got(obj map[string]any, key string) string {
	v, ok := obj[key]
	if !ok {
		return ""
	}
	return ", got " + describeLiteral(v)
}

// literalString returns v as a string if it is one without expressions.
func literalString(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok && s != "" && !expr.HasExpr(s)
}
