package docs

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MaxREADMELines is how long README.md may grow: what fleetgraph is, the
// picture, the two commands, the embedding snippet and links. Everything
// else belongs in docs/.
const MaxREADMELines = 320

func TestTheREADMEStaysShort(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	lines := strings.Count(string(raw), "\n")
	t.Logf("README.md: %d lines", lines)
	assert.LessOrEqual(t, lines, MaxREADMELines, "README.md is %d lines: move the detail into docs/ and link to it", lines)
}

// link matches an inline link or image, [text](target "title"), outside
// code; its target is the first group.
var link = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// links returns the relative link targets of a page's prose, with their
// lines.
func (p page) links() map[int][]string {
	_, prose := p.blocks()
	out := map[int][]string{}
	for i, l := range prose {
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range link.FindAllStringSubmatch(l, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out[i+1] = append(out[i+1], target)
		}
	}
	return out
}

// Every relative link of README.md, docs/ and the examples' READMEs names a
// file or directory of the repository, and every #anchor a heading of the
// page it points into.
func TestEveryLinkResolves(t *testing.T) {
	all := pages(t)
	byPath := map[string]page{}
	for _, p := range all {
		byPath[p.path] = p
	}
	anchorsOf := func(rel string) (map[string]bool, bool) {
		if p, ok := byPath[rel]; ok {
			return p.anchors(), true
		}
		raw, err := os.ReadFile(filepath.Join(repoRoot, rel))
		if err != nil {
			return nil, false
		}
		return page{path: rel, lines: strings.Split(string(raw), "\n")}.anchors(), true
	}
	checked := 0
	for _, p := range all {
		for line, targets := range p.links() {
			for _, target := range targets {
				checked++
				file, frag, _ := strings.Cut(target, "#")
				rel := p.path
				if file != "" {
					rel = path.Clean(path.Join(path.Dir(p.path), file))
					if strings.HasPrefix(rel, "../") {
						t.Errorf("%s:%d: %s leaves the repository", p.path, line, target)
						continue
					}
					if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(rel))); err != nil {
						t.Errorf("%s:%d: %s: no such file or directory %s", p.path, line, target, rel)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(rel, ".md") {
					t.Errorf("%s:%d: %s: an anchor into a file that is not Markdown", p.path, line, target)
					continue
				}
				anchors, ok := anchorsOf(rel)
				if ok && !anchors[frag] {
					t.Errorf("%s:%d: %s: %s has no heading whose anchor is #%s", p.path, line, target, rel, frag)
				}
			}
		}
	}
	t.Logf("%d relative links checked in %d pages", checked, len(all))
	assert.Greater(t, checked, 100, "links checked: the page list or the link pattern is broken")
}

func TestAnchorsFollowGitHubsRules(t *testing.T) {
	for heading, want := range map[string]string{
		"Kubeconfig Secrets (`providers/secret`)": "kubeconfig-secrets-providerssecret",
		"sdk.Options":                               "sdkoptions",
		"Graphs across clusters (hub graphs)":       "graphs-across-clusters-hub-graphs",
		"A spoke that leaves the fleet":             "a-spoke-that-leaves-the-fleet",
		"The [CLI](cli.md) and its **flags**":       "the-cli-and-its-flags",
		"Many clusters, one hub":                    "many-clusters-one-hub",
		"Placement_and rollouts":                    "placement_and-rollouts",
		"What a tenant can cost, and what they see": "what-a-tenant-can-cost-and-what-they-see",
	} {
		assert.Equal(t, want, slugOf(heading), heading)
	}
	p := page{lines: []string{"# Title", "## Status", "```", "## not a heading", "```", "## Status"}}
	assert.Equal(t, map[string]bool{"title": true, "status": true, "status-1": true}, p.anchors())
}
