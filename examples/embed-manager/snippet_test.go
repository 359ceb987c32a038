package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's embedding snippet and sdk's ExampleNewHub are the code of
// this example (the region between embed:begin and embed:end in run), which
// main_test.go runs against a real hub and spoke; the line count the
// READMEs give is that region's.
func TestTheEmbeddingSnippetsAreThisExamplesCode(t *testing.T) {
	want := region(t, "main.go")
	assert.Equal(t, want, region(t, "../../sdk/example_newhub_test.go"), "sdk.ExampleNewHub")

	readme := read(t, "../../README.md")
	section := readme[strings.Index(readme, "## Embedding it"):]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	fence := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(section)
	require.NotNil(t, fence, "README's Embedding section has a go snippet")
	assert.Equal(t, want, fence[1], "README.md's embedding snippet")

	lines := codeLines(want)
	t.Logf("the minimal embedding is %d lines of code", lines)
	for file, text := range map[string]string{"README.md": section, "examples/embed-manager/README.md": read(t, "README.md")} {
		m := regexp.MustCompile(`(\d+) lines of code`).FindStringSubmatch(text)
		require.NotNil(t, m, "%s gives the line count", file)
		n, _ := strconv.Atoi(m[1])
		assert.Equal(t, lines, n, "%s gives the line count", file)
	}
}

func read(t *testing.T, file string) string {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	return string(raw)
}

// region is the text between the embed markers of a Go file, its first
// indentation level removed.
func region(t *testing.T, file string) string {
	t.Helper()
	src := read(t, file)
	m := regexp.MustCompile(`(?s)\n\t// embed:begin\n(.*?)\t// embed:end\n`).FindStringSubmatch(src)
	require.NotNil(t, m, "%s has an embed region", file)
	return regexp.MustCompile(`(?m)^\t`).ReplaceAllString(m[1], "")
}

// codeLines counts the lines that are neither blank nor comments.
func codeLines(code string) int {
	n := 0
	for _, l := range strings.Split(code, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "//") {
			n++
		}
	}
	return n
}
