package v1alpha1

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ErrLoad is what every error of Load and LoadFile wraps; the error itself
// is a *LoadError that says where.
var ErrLoad = errors.New("invalid ResourceGraphDefinition")

// LoadError is one document that Load refused, with where in the input.
//
// +kubebuilder:object:generate=false
type LoadError struct {
	// Source is the file name (LoadFile) or "" (Load).
	Source string
	// Document counts the YAML documents of the input from 1.
	Document int
	// Line is the line of the input the problem is on, from 1; 0 if unknown.
	Line int
	// Field is the path of the offending field (e.g. spec.schema.kind), if
	// the problem is one field.
	Field string
	// Err says what is wrong.
	Err error
}

func (e *LoadError) Error() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString(e.Source + ":")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:", e.Line)
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	fmt.Fprintf(&b, "document %d: ", e.Document)
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap gives ErrLoad and the cause, for errors.Is.
func (e *LoadError) Unwrap() []error { return []error{ErrLoad, e.Err} }

// LoadFile is Load of the named file; its errors name the file.
func LoadFile(path string) ([]*ResourceGraphDefinition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rgds, err := Load(f)
	var le *LoadError
	if errors.As(err, &le) {
		le.Source = path
	}
	return rgds, err
}

// Load reads the ResourceGraphDefinitions in r: YAML (or JSON) documents
// separated by "---"; empty documents are skipped. It is strict, as kubectl
// apply --validate=strict is: a document whose apiVersion is not
// kro.run/v1alpha1 or whose kind is not ResourceGraphDefinition, a field the
// type does not have (outside the free-form schema, template and status
// parts), a key given twice and a missing metadata.name are errors, so a
// misspelt key fails here, naming its line and field, rather than later as a
// puzzling CEL error. Values mean what they mean to kubectl (YAML 1.1).
// The first bad document ends the read with a *LoadError.
func Load(r io.Reader) ([]*ResourceGraphDefinition, error) {
	dec := yamlv3.NewDecoder(r)
	var out []*ResourceGraphDefinition
	for doc := 1; ; doc++ {
		var node yamlv3.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, &LoadError{Document: doc, Line: yamlLine(err), Err: err}
		}
		rgd, lerr := decodeDocument(&node)
		if lerr != nil {
			lerr.Document = doc
			return nil, lerr
		}
		if rgd != nil {
			out = append(out, rgd)
		}
	}
}

// decodeDocument decodes one document, or returns nil for an empty one.
func decodeDocument(doc *yamlv3.Node) (*ResourceGraphDefinition, *LoadError) {
	if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		return nil, nil
	}
	root := doc.Content[0]
	if err := noDuplicateKeys(root, ""); err != nil {
		return nil, err
	}
	// Re-encoded, the document is read with YAML 1.1 values as kubectl
	// reads it (yes is true); the node tree only gives lines.
	raw, err := yamlv3.Marshal(root)
	if err != nil {
		return nil, &LoadError{Line: root.Line, Err: err}
	}
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, &LoadError{Line: root.Line, Err: err}
	}
	rgd := &ResourceGraphDefinition{}
	strict, err := sigsjson.UnmarshalStrict(js, rgd)
	if err != nil {
		return nil, fieldError(root, err)
	}
	if len(strict) > 0 {
		return nil, fieldError(root, strict[0])
	}
	return rgd, checkIdentity(root, rgd)
}

// checkIdentity refuses documents that are not a named RGD.
func checkIdentity(root *yamlv3.Node, rgd *ResourceGraphDefinition) *LoadError {
	want := GroupVersion.String()
	switch {
	case rgd.APIVersion != want:
		return &LoadError{Line: lineOf(root, "apiVersion"), Field: "apiVersion",
			Err: fmt.Errorf("is %q, want %q", rgd.APIVersion, want)}
	case rgd.Kind != "ResourceGraphDefinition":
		return &LoadError{Line: lineOf(root, "kind"), Field: "kind",
			Err: fmt.Errorf("is %q, want %q", rgd.Kind, "ResourceGraphDefinition")}
	case rgd.Name == "":
		return &LoadError{Line: lineOf(root, "metadata"), Field: "metadata.name", Err: errors.New("is required")}
	}
	return nil
}

// noDuplicateKeys refuses a mapping that names a key twice anywhere under
// n: YAML takes the last silently, which hides typos.
func noDuplicateKeys(n *yamlv3.Node, path string) *LoadError {
	switch n.Kind {
	case yamlv3.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			field := joinField(path, k.Value)
			if first, ok := seen[k.Value]; ok {
				return &LoadError{Line: k.Line, Field: field, Err: fmt.Errorf("given twice (first on line %d)", first)}
			}
			seen[k.Value] = k.Line
			if err := noDuplicateKeys(n.Content[i+1], field); err != nil {
				return err
			}
		}
	case yamlv3.SequenceNode:
		for i, item := range n.Content {
			if err := noDuplicateKeys(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinField(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var (
	unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)
	dupField     = regexp.MustCompile(`duplicate field "([^"]*)"`)
	yamlLineRe   = regexp.MustCompile(`line (\d+)`)
	typeField    = regexp.MustCompile(`Go struct field [^ .]+\.(\S+) of type`)
)

// fieldError points a decoding error at the field it names.
func fieldError(root *yamlv3.Node, err error) *LoadError {
	field := ""
	switch {
	case typeField.MatchString(err.Error()):
		field = typeField.FindStringSubmatch(err.Error())[1]
	case unknownField.MatchString(err.Error()):
		field = unknownField.FindStringSubmatch(err.Error())[1]
		err = errors.New("unknown field")
	case dupField.MatchString(err.Error()):
		field = dupField.FindStringSubmatch(err.Error())[1]
		err = errors.New("given twice")
	}
	return &LoadError{Line: lineOf(root, field), Field: field, Err: err}
}

// lineOf finds the line of the field at path (dots and [i]) under root, or
// of the deepest part of it that exists.
func lineOf(root *yamlv3.Node, path string) int {
	line, n := root.Line, root
	for _, part := range splitField(path) {
		next, keyLine := child(n, part)
		if next == nil {
			break
		}
		n, line = next, keyLine
	}
	return line
}

// child is n's field or item named part, with the line it starts on.
func child(n *yamlv3.Node, part string) (*yamlv3.Node, int) {
	if i, err := strconv.Atoi(part); err == nil && n.Kind == yamlv3.SequenceNode {
		if i >= 0 && i < len(n.Content) {
			return n.Content[i], n.Content[i].Line
		}
		return nil, 0
	}
	if n.Kind != yamlv3.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == part {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, 0
}

// splitField turns spec.resources[1].id into spec, resources, 1, id.
func splitField(path string) []string {
	path = strings.NewReplacer("[", ".", "]", "").Replace(path)
	var out []string
	for _, p := range strings.Split(path, ".") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// yamlLine is the line a YAML syntax error names, or 0.
func yamlLine(err error) int {
	m := yamlLineRe.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
