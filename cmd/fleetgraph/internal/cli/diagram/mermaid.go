package diagram

import (
	"fmt"
	"slices"
	"strings"
)

// Mermaid renders m as a Mermaid flowchart.
func (m Model) Mermaid() string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\ntitle: %q\n---\nflowchart TD\n", m.Title)
	var conditional []string
	for i, level := range m.Levels {
		fmt.Fprintf(&b, "  subgraph level%d [\"level %d\"]\n", i, i)
		for _, g := range groups(level) {
			indent := "    "
			if g.cluster != "" {
				fmt.Fprintf(&b, "    subgraph level%d_cluster%d [\"%s\"]\n", i, slices.Index(m.Clusters, g.cluster), mermaidEscape(clusterLabel(g.cluster)))
				indent = "      "
			}
			for _, r := range g.resources {
				fmt.Fprintf(&b, "%s%s%s\n", indent, mermaidID(r.ID), mermaidShape(r))
				if len(r.IncludeWhen) > 0 {
					conditional = append(conditional, mermaidID(r.ID))
				}
			}
			if g.cluster != "" {
				b.WriteString("    end\n")
			}
		}
		b.WriteString("  end\n")
	}
	for _, e := range m.Edges {
		fmt.Fprintf(&b, "  %s --> %s\n", mermaidID(e[0]), mermaidID(e[1]))
	}
	if len(conditional) > 0 {
		b.WriteString("  classDef conditional stroke-dasharray: 5 5\n")
		fmt.Fprintf(&b, "  class %s conditional\n", strings.Join(conditional, ","))
	}
	return b.String()
}

// mermaidKeywords cannot be node ids in a flowchart.
var mermaidKeywords = map[string]bool{
	"end": true, "graph": true, "subgraph": true, "flowchart": true, "class": true, "classDef": true,
	"click": true, "style": true, "linkStyle": true, "direction": true, "call": true, "href": true,
}

// mermaidID is a resource id as a Mermaid node id (a keyword gets a
// prefix; the label still shows the id).
func mermaidID(id string) string {
	if mermaidKeywords[id] {
		return "r_" + id
	}
	return id
}

func mermaidShape(r Resource) string {
	label := `"` + strings.Join(escapeAll(r.lines(), mermaidEscape), "<br/>") + `"`
	switch {
	case r.External:
		return "[(" + label + ")]"
	case len(r.ForEach) > 0:
		return "[[" + label + "]]"
	}
	return "[" + label + "]"
}

func mermaidEscape(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(s)
}

func escapeAll(lines []string, esc func(string) string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = esc(l)
	}
	return out
}
