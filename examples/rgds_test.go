// Package examples_test checks every ResourceGraphDefinition under
// examples/: the YAML files and the RGDs written as Go string literals.
// rgds_integration_test.go applies each, as YAML, to a real hub.
package examples_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// rgdMarker is how an RGD shows itself in a file: the test finds every
// file under examples/ that says it, and requires an RGD from each. (Cut
// in two so that this file does not say it.)
const rgdMarker = "kind: " + "ResourceGraphDefinition"

// exampleRGD is one RGD document found under examples/.
type exampleRGD struct {
	// Source is where it is: the file, and for a Go literal its line.
	Source string
	// YAML is the document as written.
	YAML []byte
}

// Object is the document as kubectl apply reads it.
func (r exampleRGD) Object() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(r.YAML, &u.Object); err != nil {
		return nil, err
	}
	return u, nil
}

// findRGDs walks dir for RGDs in YAML files and in Go string literals
// (tests included), and lists the files that mention rgdMarker outside
// Markdown, so the caller can check that none was missed.
func findRGDs(t *testing.T, dir string) (found []exampleRGD, mentions []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rgds, mentioned, err := scanFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if mentioned {
			mentions = append(mentions, path)
		}
		found = append(found, rgds...)
		return nil
	})
	require.NoError(t, err)
	return found, mentions
}

// scanFile returns the RGDs of one file, and whether it mentions
// rgdMarker outside Markdown.
func scanFile(path string) ([]exampleRGD, bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	mentioned := bytes.Contains(raw, []byte(rgdMarker)) && filepath.Ext(path) != ".md"
	switch filepath.Ext(path) {
	case ".yaml", ".yml":
		docs, err := rgdDocuments(raw)
		var out []exampleRGD
		for _, doc := range docs {
			out = append(out, exampleRGD{Source: path, YAML: doc})
		}
		return out, mentioned, err
	case ".go":
		out, err := goLiterals(path, raw)
		return out, mentioned, err
	}
	return nil, mentioned, nil
}

// rgdDocuments returns the YAML documents of raw that are RGDs.
func rgdDocuments(raw []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, err
		}
		if head.Kind == "ResourceGraphDefinition" {
			out = append(out, doc)
		}
	}
}

// goLiterals returns the RGDs written as string literals in a Go file.
func goLiterals(path string, src []byte) ([]exampleRGD, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []exampleRGD
	var failed error
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING || !strings.Contains(lit.Value, rgdMarker) {
			return true
		}
		text, err := strconv.Unquote(lit.Value)
		if err != nil {
			failed = err
			return false
		}
		docs, err := rgdDocuments([]byte(text))
		if err != nil {
			failed = err
			return false
		}
		for _, doc := range docs {
			out = append(out, exampleRGD{Source: fset.Position(lit.Pos()).String(), YAML: doc})
		}
		return true
	})
	return out, failed
}

// Every file under examples/ that mentions an RGD yields one, and every
// RGD found reads strictly (as kubectl apply --validate=strict would).
// The hub compiles them in rgds_integration_test.go.
func TestEveryExampleRGDIsFoundAndReadsStrictly(t *testing.T) {
	found, mentions := findRGDs(t, ".")
	require.NotEmpty(t, found)
	from := map[string]bool{}
	for _, r := range found {
		from[strings.SplitN(r.Source, ":", 2)[0]] = true
		_, err := v1alpha1.Load(bytes.NewReader(r.YAML))
		assert.NoError(t, err, r.Source)
	}
	for _, path := range mentions {
		assert.True(t, from[path], "%s mentions %q but no RGD was found in it: write RGDs as YAML files or whole Go string literals", path, rgdMarker)
	}
	names := map[string]string{}
	for _, r := range found {
		u, err := r.Object()
		require.NoError(t, err, r.Source)
		if prev, dup := names[u.GetName()]; dup {
			t.Errorf("%s and %s both name an RGD %q: one hub serves all examples in the integration test", prev, r.Source, u.GetName())
		}
		names[u.GetName()] = r.Source
		t.Logf("RGD %q in %s", u.GetName(), r.Source)
	}
}
