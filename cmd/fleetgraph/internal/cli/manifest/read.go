package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/input"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// RGDKind is the kind of a ResourceGraphDefinition.
const RGDKind = "ResourceGraphDefinition"

// Document is one ResourceGraphDefinition document of a file.
type Document struct {
	// File is the path it was read from, as given.
	File string
	// Line is the line of the file the document starts on, from 1.
	Line int
	// RGD is the decoded ResourceGraphDefinition: nil when it could not
	// be decoded at all; when Errs is set, what a lenient decoding made
	// of it (unknown fields dropped), for a compiler to find more.
	RGD *v1alpha1.ResourceGraphDefinition
	// Errs are why the strict loader (v1alpha1.Load) refuses the
	// document, each with the line in the file: its first error, and
	// every other unknown field.
	Errs []*v1alpha1.LoadError

	root *yamlv3.Node
}

// Set is what Read found.
type Set struct {
	// Documents are the ResourceGraphDefinition documents, in file order
	// (Read only: Each hands them over one by one).
	Documents []*Document
	// Files is how many files were read.
	Files int
	// Skipped counts the documents of other kinds (instances, CRDs...).
	Skipped int
	// Empty counts the files that hold no document at all.
	Empty int
	// NotYAML lists the files found in directories that are not YAML
	// (templates for another tool, say), each with why; they are skipped.
	NotYAML []error
}

// Read reads every ResourceGraphDefinition in paths: files (multi-document
// YAML or JSON; "-" is standard input) and directories (their .yaml, .yml
// and .json files, recursively, in lexical order), within the bounds o
// sets (package input). Documents of other kinds are counted and
// skipped. A file that cannot be read is an error, and so is one named in
// paths that is not YAML; one found in a directory that is not YAML is
// listed in NotYAML and skipped. A ResourceGraphDefinition the strict
// loader refuses is a Document with Errs set.
func Read(o input.Options, paths ...string) (*Set, error) {
	var docs []*Document
	set, err := Each(o, paths, func(d *Document) error {
		docs = append(docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	set.Documents = docs
	return set, nil
}

// Each is Read that hands each file's documents to fn once the file is
// read, and keeps none: memory holds one file at a time.
func Each(o input.Options, paths []string, fn func(*Document) error) (*Set, error) {
	set := &Set{}
	err := input.Walk(o, paths, isManifest, func(name string, data []byte) error {
		docs, err := set.readData(name, data)
		var ny *notYAML
		if errors.As(err, &ny) && !slices.Contains(paths, name) {
			set.NotYAML = append(set.NotYAML, err)
			return nil
		}
		if err != nil {
			return err
		}
		for _, d := range docs {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

func isManifest(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readData reads one file's documents; nothing of a file that is not YAML.
func (s *Set) readData(name string, raw []byte) ([]*Document, error) {
	var docs []*Document
	skipped, found := s.Skipped, false
	for _, chunk := range split(raw) {
		d, some, err := s.readDocument(name, chunk)
		if err != nil {
			s.Skipped = skipped
			return nil, err
		}
		found = found || some
		if d != nil {
			docs = append(docs, d)
		}
	}
	s.Files++
	if !found {
		s.Empty++
	}
	return docs, nil
}

// notYAML is a document that does not parse as YAML.
type notYAML struct {
	file string
	line int
	err  error
}

func (e *notYAML) Error() string { return fmt.Sprintf("%s:%d: not YAML: %v", e.file, e.line, e.err) }
func (e *notYAML) Unwrap() error { return e.err }

// chunk is one YAML document's text and the line it starts on.
type chunk struct {
	text []byte
	line int
}

// split cuts a file at its "---" separator lines, as Kubernetes' YAML
// reader does. The chunks share raw's memory.
func split(raw []byte) []chunk {
	var out []chunk
	start, startLine, n := 0, 1, 0
	for pos := 0; pos < len(raw); {
		end := bytes.IndexByte(raw[pos:], '\n')
		next := len(raw)
		if end >= 0 {
			next = pos + end + 1
		}
		n++
		if isSeparator(bytes.TrimRight(raw[pos:next], "\r\n")) {
			out = append(out, chunk{text: raw[start:pos], line: startLine})
			start, startLine = next, n+1
		}
		pos = next
	}
	return append(out, chunk{text: raw[start:], line: startLine})
}

func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// readDocument returns the ResourceGraphDefinition in c, or nil for an
// empty document or one of another kind; some says whether c held a
// document at all.
func (s *Set) readDocument(name string, c chunk) (d *Document, some bool, err error) {
	if err := input.CheckStructure(fmt.Sprintf("%s:%d", name, c.line), c.text); err != nil {
		return nil, false, err
	}
	var node yamlv3.Node
	if err := yamlv3.Unmarshal(c.text, &node); err != nil {
		return nil, false, &notYAML{file: name, line: c.line, err: err}
	}
	if len(node.Content) == 0 || node.Content[0].Tag == "!!null" {
		return nil, false, nil
	}
	root := node.Content[0]
	if kind, _ := field(root, "kind"); root.Kind != yamlv3.MappingNode || kind == nil || kind.Value != RGDKind {
		s.Skipped++
		return nil, true, nil
	}
	d = &Document{File: name, Line: c.line, root: root}
	rgds, err := v1alpha1.Load(bytes.NewReader(c.text))
	var le *v1alpha1.LoadError
	switch {
	case errors.As(err, &le):
		d.Errs = []*v1alpha1.LoadError{d.inFile(le)}
		d.RGD, d.Errs = d.lenient(c.text, d.Errs)
	case err != nil:
		d.Errs = []*v1alpha1.LoadError{{Source: name, Document: 1, Line: c.line, Err: err}}
	case len(rgds) == 1:
		d.RGD = rgds[0]
	default:
		return nil, true, fmt.Errorf("%s:%d: expected one document, read %d", name, c.line, len(rgds))
	}
	return d, true, nil
}

// inFile turns the line of a document's LoadError into a line of its file.
func (d *Document) inFile(le *v1alpha1.LoadError) *v1alpha1.LoadError {
	le.Source = d.File
	if le.Line > 0 {
		le.Line += d.Line - 1
	} else {
		le.Line = d.Line
	}
	return le
}

// lenient decodes a document the strict loader refused, dropping unknown
// fields, so that one pass reports what else is wrong: it adds to errs
// every unknown field past the loader's first. It returns no RGD when the
// document does not decode even so, or is not a named RGD.
func (d *Document) lenient(text []byte, errs []*v1alpha1.LoadError) (*v1alpha1.ResourceGraphDefinition, []*v1alpha1.LoadError) {
	js, err := yaml.YAMLToJSON(text)
	if err != nil {
		return nil, errs
	}
	rgd := &v1alpha1.ResourceGraphDefinition{}
	strict, err := sigsjson.UnmarshalStrict(js, rgd)
	if err != nil || rgd.APIVersion != v1alpha1.GroupVersion.String() || rgd.Name == "" {
		return nil, errs
	}
	for _, e := range strict {
		m := unknownField.FindStringSubmatch(e.Error())
		if m == nil || slices.ContainsFunc(errs, func(le *v1alpha1.LoadError) bool { return le.Field == m[1] }) {
			continue
		}
		errs = append(errs, &v1alpha1.LoadError{Source: d.File, Document: 1, Line: d.LineOf("", m[1]), Field: m[1], Err: errors.New("unknown field")})
	}
	return rgd, errs
}

var unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)

// Names lists the documents' RGD names, sorted, for messages.
func (s *Set) Names() []string {
	var out []string
	for _, d := range s.Documents {
		if d.RGD != nil {
			out = append(out, d.RGD.Name)
		}
	}
	slices.Sort(out)
	return out
}
