package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

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
	// RGD is the decoded ResourceGraphDefinition; nil when Err is set.
	RGD *v1alpha1.ResourceGraphDefinition
	// Err is why the document could not be read as a
	// ResourceGraphDefinition (v1alpha1.Load's strict rules), with the
	// line in the file.
	Err *v1alpha1.LoadError

	root *yamlv3.Node
}

// Set is what Read found.
type Set struct {
	// Documents are the ResourceGraphDefinition documents, in file order.
	Documents []*Document
	// Files is how many files were read.
	Files int
	// Skipped counts the documents of other kinds (instances, CRDs...).
	Skipped int
	// NotYAML lists the files found in directories that are not YAML
	// (templates for another tool, say), each with why; they are skipped.
	NotYAML []error
}

// Read reads every ResourceGraphDefinition in paths: files (multi-document
// YAML or JSON; "-" is standard input) and directories (their .yaml, .yml
// and .json files, recursively, in lexical order). Documents of other kinds
// are counted and skipped. A file that cannot be read is an error, and so
// is one named in paths that is not YAML; one found in a directory that is
// not YAML is listed in NotYAML and skipped. A ResourceGraphDefinition the
// strict loader refuses is a Document with Err set.
func Read(stdin []byte, paths ...string) (*Set, error) {
	set := &Set{}
	for _, root := range paths {
		if root == "-" {
			if err := set.readData("-", stdin); err != nil {
				return nil, err
			}
			continue
		}
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || (path != root && !isManifest(path)) {
				return nil
			}
			err = set.readFile(path)
			var ny *notYAML
			if path != root && errors.As(err, &ny) {
				set.NotYAML = append(set.NotYAML, err)
				return nil
			}
			return err
		})
		if err != nil {
			return nil, err
		}
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

func (s *Set) readFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return s.readData(path, raw)
}

// readData reads one file's documents; nothing of a file that is not YAML.
func (s *Set) readData(name string, raw []byte) error {
	var docs []*Document
	skipped := s.Skipped
	for _, chunk := range split(raw) {
		d, err := s.readDocument(name, chunk)
		if err != nil {
			s.Skipped = skipped
			return err
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
	s.Files++
	s.Documents = append(s.Documents, docs...)
	return nil
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
// reader does.
func split(raw []byte) []chunk {
	var out []chunk
	cur := chunk{line: 1}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, len(raw)+1)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if isSeparator(line) {
			out = append(out, cur)
			cur = chunk{line: n + 1}
			continue
		}
		cur.text = append(cur.text, line...)
		cur.text = append(cur.text, '\n')
	}
	return append(out, cur)
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
// empty document or one of another kind.
func (s *Set) readDocument(name string, c chunk) (*Document, error) {
	var node yamlv3.Node
	if err := yamlv3.Unmarshal(c.text, &node); err != nil {
		return nil, &notYAML{file: name, line: c.line, err: err}
	}
	if len(node.Content) == 0 || node.Content[0].Kind != yamlv3.MappingNode {
		if len(node.Content) > 0 && node.Content[0].Tag != "!!null" {
			s.Skipped++
		}
		return nil, nil
	}
	root := node.Content[0]
	if kind, _ := field(root, "kind"); kind == nil || kind.Value != RGDKind {
		s.Skipped++
		return nil, nil
	}
	d := &Document{File: name, Line: c.line, root: root}
	rgds, err := v1alpha1.Load(bytes.NewReader(c.text))
	var le *v1alpha1.LoadError
	switch {
	case errors.As(err, &le):
		le.Source = name
		if le.Line > 0 {
			le.Line += c.line - 1
		} else {
			le.Line = c.line
		}
		d.Err = le
	case err != nil:
		d.Err = &v1alpha1.LoadError{Source: name, Document: 1, Line: c.line, Err: err}
	case len(rgds) == 1:
		d.RGD = rgds[0]
	default:
		return nil, fmt.Errorf("%s:%d: expected one document, read %d", name, c.line, len(rgds))
	}
	return d, nil
}

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
