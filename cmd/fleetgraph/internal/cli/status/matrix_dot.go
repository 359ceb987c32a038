package status

import (
	"fmt"
	"io"
	"strings"
)

// WriteMatrixDOT writes the fleet matrix (graphs × clusters, as
// WriteMatrix) as a Graphviz digraph of one HTML-like table: each cell
// filled by its health (green serving the revision it should, yellow on
// its way, red wrong) with the revision served, the instances ready and in
// error.
func WriteMatrixDOT(w io.Writer, f *Fleet, st Style) error {
	m := newMatrix(f, st)
	var b strings.Builder
	b.WriteString("digraph fleet {\n  label=\"fleetgraph: graphs × clusters\";\n  labelloc=t;\n  fontname=\"Helvetica\";\n")
	b.WriteString("  node [shape=plaintext, fontname=\"Helvetica\"];\n")
	b.WriteString("  matrix [label=<<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"6\">\n")
	head := []string{"GRAPH", "READY", "REVISION"}
	head = append(head, m.clusters...)
	if m.hidden > 0 {
		head = append(head, "OTHERS")
	}
	b.WriteString("    <TR>")
	for _, h := range head {
		fmt.Fprintf(&b, "<TD><B>%s</B></TD>", htmlEscape(h))
	}
	b.WriteString("</TR>\n")
	for _, r := range m.rows {
		fmt.Fprintf(&b, "    <TR><TD ALIGN=\"LEFT\"><B>%s</B><BR/><FONT POINT-SIZE=\"10\">%s</FONT></TD>", htmlEscape(r.graph), htmlEscape(r.counts))
		fmt.Fprintf(&b, "<TD BGCOLOR=\"%s\">%s</TD><TD>%s</TD>", colors[r.readyTone], htmlEscape(r.ready), htmlEscape(r.revision))
		for _, c := range r.cells {
			if len(c.lines) == 0 {
				fmt.Fprintf(&b, "<TD BGCOLOR=\"%s\">·</TD>", absentColor)
				continue
			}
			lines := make([]string, len(c.lines))
			for i, l := range c.lines {
				lines[i] = htmlEscape(l)
			}
			title := ""
			if c.detail != "" {
				title = fmt.Sprintf(" TOOLTIP=\"%s\"", htmlEscape(shorten(c.detail, 200)))
			}
			fmt.Fprintf(&b, "<TD BGCOLOR=\"%s\"%s>%s</TD>", colors[c.tone], title, strings.Join(lines, "<BR/>"))
		}
		if m.hidden > 0 {
			fmt.Fprintf(&b, "<TD>%s</TD>", htmlEscape(r.others))
		}
		b.WriteString("</TR>\n")
	}
	b.WriteString("  </TABLE>>];\n}\n")
	if len(m.rows) == 0 {
		b.Reset()
		b.WriteString("digraph fleet {\n  label=\"No ResourceGraphDefinitions on the hub.\";\n}\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// htmlEscape makes s text of a Graphviz HTML-like label or of SVG.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;").Replace(s)
}
