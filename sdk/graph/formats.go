package graph

import (
	"maps"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
)

// Strings with an OpenAPI format are typed as kro v0.9.4 and the API
// server's CEL type them: date-time and date as timestamp, duration as
// duration, byte as bytes. So `job.status.completionTime < timestamp(...)`
// compiles, and `secret.data.password + "x"` does not, exactly as in kro.
//
// Values at run time are plain JSON, so before an expression runs, the
// strings at those paths are parsed into the matching CEL values (see
// formatTree). Status inference keeps kro's view of such fields through
// these distinct declarations (see statusSchema.ofDecl).
var (
	timestampDecl = apiservercel.NewSimpleTypeWithMinSize("timestamp", cel.TimestampType, types.Timestamp{Time: time.Time{}}, apiservercel.MinDatetimeSizeJSON)
	dateDecl      = apiservercel.NewSimpleTypeWithMinSize("timestamp", cel.TimestampType, types.Timestamp{Time: time.Time{}}, apiservercel.JSONDateSize)
	durationDecl  = apiservercel.NewSimpleTypeWithMinSize("duration", cel.DurationType, types.Duration{Duration: 0}, apiservercel.MinDurationSizeJSON)
	bytesDecl     = apiservercel.NewSimpleTypeWithMinSize("bytes", cel.BytesType, types.Bytes([]byte{}), apiservercel.MinStringSize)
)

func stringDecl(format string) *apiservercel.DeclType {
	switch format {
	case "date-time":
		return timestampDecl
	case "date":
		return dateDecl
	case "duration":
		return durationDecl
	case "byte":
		return bytesDecl
	}
	return apiservercel.StringType
}

// isFormatted reports whether d is one of the formatted-string types.
func isFormatted(d *apiservercel.DeclType) bool {
	return d == timestampDecl || d == dateDecl || d == durationDecl || d == bytesDecl
}

// formatTree says where, in a JSON value of some declared type, the
// formatted strings are. A nil tree means there are none.
type formatTree struct {
	// leaf is the declaration of a formatted string at this point.
	leaf *apiservercel.DeclType
	// fields are the object fields that hold formatted strings.
	fields map[string]*formatTree
	// elem covers list items and map values.
	elem *formatTree
}

// formatsOf returns the format tree of d, nil when d holds no formatted
// string. Trees are cached by declaration, as declarations are by schema.
func formatsOf(d *apiservercel.DeclType) *formatTree {
	if d == nil {
		return nil
	}
	return formatCache.get(d, func() *formatTree { return buildFormats(d, 0) })
}

var formatCache = newBoundedCache[*apiservercel.DeclType, *formatTree](declCacheSize)

func buildFormats(d *apiservercel.DeclType, depth int) *formatTree {
	switch {
	case d == nil || depth > maxTypeDepth:
		return nil
	case isFormatted(d):
		return &formatTree{leaf: d}
	case d.IsObject():
		var fields map[string]*formatTree
		for name, f := range d.Fields {
			if sub := buildFormats(f.Type, depth+1); sub != nil {
				if fields == nil {
					fields = map[string]*formatTree{}
				}
				fields[name] = sub
			}
		}
		if fields == nil {
			return nil
		}
		return &formatTree{fields: fields}
	case d.IsList() || d.IsMap():
		if sub := buildFormats(d.ElemType, depth+1); sub != nil {
			return &formatTree{elem: sub}
		}
	}
	return nil
}

// formatsOfType is formatsOf for a CEL type, such as a forEach iterator's:
// object types are looked up by name among the graph's declarations.
func (e *celEnvs) formatsOfType(t *cel.Type, depth int) *formatTree {
	if t == nil || depth > maxTypeDepth {
		return nil
	}
	switch t.Kind() {
	case types.TimestampKind:
		return &formatTree{leaf: timestampDecl}
	case types.DurationKind:
		return &formatTree{leaf: durationDecl}
	case types.BytesKind:
		return &formatTree{leaf: bytesDecl}
	case types.StructKind:
		if d, ok := e.findDeclType(t.TypeName()); ok {
			return formatsOf(d)
		}
	case types.ListKind, types.MapKind:
		params := t.Parameters()
		if sub := e.formatsOfType(params[len(params)-1], depth+1); sub != nil {
			return &formatTree{elem: sub}
		}
	}
	return nil
}

// apply returns v with the formatted strings f points at parsed into CEL
// values. It copies only the maps and lists on the way to them; v itself
// is never modified. An object tree applied to a list applies to each item
// (a forEach collection is a list of objects). A string that does not
// parse becomes an error value, so only an expression that reads it fails.
func (f *formatTree) apply(v any) any {
	if f == nil {
		return v
	}
	switch v := v.(type) {
	case string:
		if f.leaf != nil {
			return parseFormatted(f.leaf, v)
		}
	case map[string]any:
		return f.applyMap(v)
	case []any:
		sub := f.elem
		if sub == nil && f.fields != nil {
			sub = f
		}
		if sub == nil {
			return v
		}
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = sub.apply(item)
		}
		return out
	}
	return v
}

func (f *formatTree) applyMap(m map[string]any) any {
	switch {
	case f.fields != nil:
		out := maps.Clone(m)
		for name, sub := range f.fields {
			if x, ok := m[name]; ok {
				out[name] = sub.apply(x)
			}
		}
		return out
	case f.elem != nil:
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[k] = f.elem.apply(x)
		}
		return out
	}
	return m
}

// parseFormatted parses s as the API server does for a string of format d.
func parseFormatted(d *apiservercel.DeclType, s string) any {
	switch d {
	case timestampDecl:
		t, err := strfmt.ParseDateTime(s)
		if err != nil {
			return types.NewErr("invalid date-time formatted string %q: %v", s, err)
		}
		return types.Timestamp{Time: time.Time(t)}
	case dateDecl:
		t, err := time.Parse(strfmt.RFC3339FullDate, s)
		if err != nil {
			return types.NewErr("invalid date formatted string %q: %v", s, err)
		}
		return types.Timestamp{Time: t}
	case durationDecl:
		dur, err := strfmt.ParseDuration(s)
		if err != nil {
			return types.NewErr("invalid duration %q: %v", s, err)
		}
		return types.Duration{Duration: dur}
	case bytesDecl:
		var b strfmt.Base64
		if err := b.UnmarshalText([]byte(s)); err != nil {
			return types.NewErr("invalid byte formatted string %q: %v", s, err)
		}
		return types.Bytes(b)
	}
	return s
}

// formatsFor returns, for the names an expression reads, the format trees
// of those that hold formatted strings; nil when none does.
func formatsFor(refs []string, trees map[string]*formatTree) map[string]*formatTree {
	var out map[string]*formatTree
	for _, name := range refs {
		if t := trees[name]; t != nil {
			if out == nil {
				out = map[string]*formatTree{}
			}
			out[name] = t
		}
	}
	return out
}
