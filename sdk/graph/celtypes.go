package graph

import (
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// maxTypeDepth bounds how deep an OpenAPI schema is turned into CEL types;
// deeper parts are dyn. Kubernetes kinds nest about a dozen levels.
const maxTypeDepth = 32

// declTypeOf turns an OpenAPI schema into a CEL type declaration named
// after name (nested objects get name.field...).
//
// Strings with a format are typed as the API server and kro type them (see
// formats.go). It differs from the API server's conversion where our values
// at run time are plain JSON (map[string]any...) rather than schema-aware
// wrappers: free-form objects (x-kubernetes-preserve-unknown-fields without
// properties) are map(string, dyn), int-or-string is dyn, and field names
// are not escaped.
func declTypeOf(s common.Schema, name string, depth int) *apiservercel.DeclType {
	if s == nil || depth > maxTypeDepth || s.IsXIntOrString() {
		return apiservercel.DynType
	}
	if s.IsXEmbeddedResource() {
		s = s.WithTypeAndObjectMeta()
	}
	switch s.Type() {
	case "object":
		return objectDeclType(s, name, depth)
	case "array":
		if s.Items() == nil {
			return apiservercel.NewListType(apiservercel.DynType, -1)
		}
		return apiservercel.NewListType(declTypeOf(s.Items(), name+"@items", depth+1), -1)
	case "string":
		return stringDecl(s.Format())
	case "integer":
		return apiservercel.IntType
	case "number":
		return apiservercel.DoubleType
	case "boolean":
		return apiservercel.BoolType
	}
	return apiservercel.DynType
}

func objectDeclType(s common.Schema, name string, depth int) *apiservercel.DeclType {
	if ap := s.AdditionalProperties(); ap != nil && ap.Schema() != nil {
		return apiservercel.NewMapType(apiservercel.StringType, declTypeOf(ap.Schema(), name+"@values", depth+1), -1)
	}
	props := s.Properties()
	if len(props) == 0 {
		return apiservercel.NewMapType(apiservercel.StringType, apiservercel.DynType, -1)
	}
	required := map[string]bool{}
	for _, r := range s.Required() {
		required[r] = true
	}
	closed := !s.IsXPreserveUnknownFields()
	fields := make(map[string]*apiservercel.DeclField, len(props))
	for field, prop := range props {
		if !isCELIdent(field) {
			closed = false
			continue
		}
		t := declTypeOf(prop, name+"."+field, depth+1)
		fields[field] = apiservercel.NewDeclField(field, t, required[field], nil, nil)
	}
	t := apiservercel.NewObjectType(name, fields)
	switch {
	case closed:
		t.Metadata = map[string]string{closedKey: "true"}
	case s.IsXPreserveUnknownFields():
		t.Metadata = map[string]string{openKey: "true"}
	}
	return t
}

// openKey marks, in DeclType.Metadata, an object type whose schema
// preserves unknown fields: as in kro, reading a field its schema does not
// list type-checks as dyn instead of failing.
const openKey = "fleetgraph.dev/open"

// openFieldsProvider types the fields an open object's schema does not
// list as dyn (see openKey).
type openFieldsProvider struct {
	*apiservercel.DeclTypeProvider
}

func (p *openFieldsProvider) FindStructFieldType(typeName, field string) (*types.FieldType, bool) {
	if ft, ok := p.DeclTypeProvider.FindStructFieldType(typeName, field); ok {
		return ft, true
	}
	if t, ok := p.FindDeclType(typeName); ok && t.Metadata[openKey] == "true" {
		return &types.FieldType{Type: cel.DynType}, true
	}
	return nil, false
}

// closedKey marks, in DeclType.Metadata, an object type that lists every
// field its schema allows, so templates may be checked for unknown fields.
const closedKey = "fleetgraph.dev/closed"

// isClosed reports whether t is an object type whose schema allows no
// fields beyond t's.
func isClosed(t *apiservercel.DeclType) bool {
	return t != nil && t.IsObject() && t.Metadata[closedKey] == "true"
}

// isCELIdent reports whether a field can be selected with ".name".
func isCELIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// declCache remembers the CEL type of each resolved schema, keyed by the
// schema pointer (resolvers hand out the same pointer for the same kind) and
// the type name.
var declCache = newBoundedCache[declKey, *apiservercel.DeclType](declCacheSize)

const declCacheSize = 512

type declKey struct {
	s    *spec.Schema
	name string
}

func cachedDeclType(s *spec.Schema, name string) *apiservercel.DeclType {
	return declCache.get(declKey{s, name}, func() *apiservercel.DeclType {
		return declTypeOf(&openapi.Schema{Schema: s}, name, 0)
	})
}

// boundedCache is a map safe for concurrent use, cleared whenever it
// reaches its size, for values derived from immutable keys.
type boundedCache[K comparable, V any] struct {
	mu   sync.Mutex
	m    map[K]V
	size int
}

func newBoundedCache[K comparable, V any](size int) *boundedCache[K, V] {
	return &boundedCache[K, V]{m: map[K]V{}, size: size}
}

// get returns key's value, computing it with make (outside the lock) when
// absent.
func (c *boundedCache[K, V]) get(key K, make func() V) V {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = make()
	c.mu.Lock()
	if len(c.m) >= c.size {
		clear(c.m)
	}
	c.m[key] = v
	c.mu.Unlock()
	return v
}

// celType returns the CEL type of a declaration, treating nil as dyn.
func celType(t *apiservercel.DeclType) *cel.Type {
	if t == nil {
		return cel.DynType
	}
	return t.CelType()
}

// typeName formats a CEL type for messages.
func typeName(t *cel.Type) string {
	if t == nil {
		return "dyn"
	}
	return t.String()
}

// gvkTypeName names the CEL object type of a kind.
func gvkTypeName(group, version, kind string) string {
	if group == "" {
		group = "core"
	}
	r := strings.NewReplacer(".", "_", "-", "_")
	return fmt.Sprintf("%skind.%s.%s.%s", typeNamePrefix, r.Replace(group), version, kind)
}

// typeNamePrefix starts the names of our object types. CEL resolves a.b.c
// as a type name before it tries field selection, so type names must never
// look like a variable path; resource ids cannot contain "_".
const typeNamePrefix = "fg__"
