package diagram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// DOT renders m as a Graphviz digraph, one cluster per level.
func (m Model) DOT() string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(m.Title))
	fmt.Fprintf(&b, "  label=%s;\n  labelloc=t;\n  rankdir=TB;\n  fontname=\"Helvetica\";\n", dotQuote(m.Title))
	b.WriteString("  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n")
	for i, level := range m.Levels {
		fmt.Fprintf(&b, "  subgraph cluster_level%d {\n    label=\"level %d\";\n    style=dashed;\n    color=gray;\n", i, i)
		for _, g := range groups(level) {
			indent := "    "
			if g.cluster != "" {
				c := slices.Index(m.Clusters, g.cluster)
				fmt.Fprintf(&b, "    subgraph cluster_level%d_cluster%d {\n      label=%s;\n      style=solid;\n      color=%q;\n",
					i, c, dotQuote(clusterLabel(g.cluster)), palette[c%len(palette)])
				indent = "      "
			}
			for _, r := range g.resources {
				fmt.Fprintf(&b, "%s%s [label=%s%s];\n", indent, dotQuote(r.ID), dotQuote(strings.Join(r.lines(), "\n")), dotAttrs(r))
			}
			if g.cluster != "" {
				b.WriteString("    }\n")
			}
		}
		b.WriteString("  }\n")
	}
	for _, e := range m.Edges {
		fmt.Fprintf(&b, "  %s -> %s;\n", dotQuote(e[0]), dotQuote(e[1]))
	}
	b.WriteString("}\n")
	return b.String()
}

// palette colours a hub graph's clusters, the same cluster alike in
// every level (Graphviz colour names, readable on white).
var palette = []string{"steelblue", "darkorange", "forestgreen", "firebrick", "purple", "saddlebrown", "deeppink", "darkcyan"}

func dotAttrs(r Resource) string {
	var attrs []string
	switch {
	case r.External:
		attrs = append(attrs, "shape=cylinder")
	case len(r.ForEach) > 0:
		attrs = append(attrs, "shape=box3d")
	}
	switch {
	case len(r.IncludeWhen) > 0:
		attrs = append(attrs, "style=dashed")
	case len(attrs) > 0:
		attrs = append(attrs, "style=solid") // not rounded: the shape says it
	}
	if len(attrs) == 0 {
		return ""
	}
	return ", " + strings.Join(attrs, ", ")
}

func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// ErrNoGraphviz is returned by SVG when Graphviz's dot is not installed.
var ErrNoGraphviz = errors.New("Graphviz's dot command is not installed (Debian: apt-get install graphviz); -o dot prints the source to render elsewhere")

// SVG renders m with Graphviz's dot, which must be on the PATH.
func (m Model) SVG(ctx context.Context) ([]byte, error) {
	path, err := exec.LookPath("dot")
	if err != nil {
		return nil, ErrNoGraphviz
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin = strings.NewReader(m.DOT())
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("dot -Tsvg: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}
