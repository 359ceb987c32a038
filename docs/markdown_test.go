package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = ".."

// page is one Markdown file: its path from the repository root and its
// lines.
type page struct {
	path  string
	lines []string
}

// pages reads README.md, every Markdown file under docs/ and the examples'
// READMEs.
func pages(t *testing.T) []page {
	t.Helper()
	paths := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(repoRoot, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return err
	})
	require.NoError(t, err)
	examples, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*", "README.md"))
	require.NoError(t, err)
	for _, p := range examples {
		rel, _ := filepath.Rel(repoRoot, p)
		paths = append(paths, filepath.ToSlash(rel))
	}
	sort.Strings(paths[1:])
	out := make([]page, 0, len(paths))
	for _, p := range paths {
		raw, err := os.ReadFile(filepath.Join(repoRoot, p))
		require.NoError(t, err)
		out = append(out, page{path: p, lines: strings.Split(string(raw), "\n")})
	}
	return out
}

// block is a fenced code block: its info string, the line of its opening
// fence (1-based) and its text, the fence's indentation removed.
type block struct {
	info string
	line int
	text string
}

var fence = regexp.MustCompile("^( *)(```+|~~~+)\\s*([^`\\s]*)")

// blocks returns the page's fenced code blocks, and its prose: the other
// lines, with the blocks' lines blanked so that line numbers still hold.
func (p page) blocks() ([]block, []string) {
	var out []block
	prose := make([]string, len(p.lines))
	for i := 0; i < len(p.lines); i++ {
		m := fence.FindStringSubmatch(p.lines[i])
		if m == nil {
			prose[i] = p.lines[i]
			continue
		}
		indent, marker := len(m[1]), m[2]
		b := block{info: m[3], line: i + 1}
		var body []string
		for i++; i < len(p.lines); i++ {
			if strings.HasPrefix(strings.TrimLeft(p.lines[i], " "), marker) {
				break
			}
			l := p.lines[i]
			if len(l)-len(strings.TrimLeft(l, " ")) >= indent {
				l = l[indent:]
			}
			body = append(body, l)
		}
		b.text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out, prose
}

var (
	heading   = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	mdLink    = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	codeSpan  = regexp.MustCompile("`+[^`]*`+")
	emphasis  = regexp.MustCompile(`[*]+`)
	htmlAnchr = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// anchors are the #fragments GitHub gives the page's headings: the
// heading's text as rendered, lower-cased, with everything but letters,
// digits, spaces, hyphens and underscores dropped and spaces turned into
// hyphens; a repeated slug gets -1, -2, ... (github-slugger's rules).
func (p page) anchors() map[string]bool {
	_, prose := p.blocks()
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose {
		for _, m := range htmlAnchr.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		slug := slugOf(m[2])
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			slug = slug + "-" + strconv.Itoa(n+1)
		} else {
			seen[slug] = 0
		}
		out[slug] = true
	}
	return out
}

func slugOf(heading string) string {
	text := mdLink.ReplaceAllString(heading, "$1")
	text = strings.ReplaceAll(text, "`", "")
	text = emphasis.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.Is(unicode.Mn, r), r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
