package status

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// SVG layout, in pixels: a monospace font of svgFont pixels is about
// svgChar wide per character.
const (
	svgFont    = 13
	svgChar    = 8
	svgLine    = 17
	svgPad     = 8
	svgMargin  = 10
	svgTitleHt = 28
)

// WriteMatrixSVG writes the fleet matrix (graphs × clusters, as
// WriteMatrix and WriteMatrixDOT) as an SVG image, drawn here: no
// Graphviz needed. Each cell is filled by its health, holds the revision
// served and the instances ready and in error, and shows the cluster's
// message as a tooltip.
func WriteMatrixSVG(w io.Writer, f *Fleet, st Style) error {
	m := newMatrix(f, st)
	grid := m.grid()
	widths := make([]int, len(grid[0]))
	heights := make([]int, len(grid))
	for i, row := range grid {
		for j, c := range row {
			for _, l := range c.lines {
				widths[j] = max(widths[j], utf8.RuneCountInString(l)*svgChar+2*svgPad)
			}
			heights[i] = max(heights[i], max(len(c.lines), 1)*svgLine+2*svgPad-4)
		}
	}
	width, height := 2*svgMargin, 2*svgMargin+svgTitleHt
	for _, x := range widths {
		width += x
	}
	for _, y := range heights {
		height += y
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="ui-monospace, Menlo, Consolas, monospace" font-size="%d">`+"\n", width, height, width, height, svgFont)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-family="Helvetica, Arial, sans-serif" font-size="16" font-weight="bold">fleetgraph: graphs × clusters</text>`+"\n", svgMargin, svgMargin+18)
	y := svgMargin + svgTitleHt
	for i, row := range grid {
		x := svgMargin
		for j, c := range row {
			writeSVGCell(&b, c, x, y, widths[j], heights[i])
			x += widths[j]
		}
		y += heights[i]
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// svgCell is one cell of the drawn grid.
type svgCell struct {
	lines  []string
	fill   string
	bold   bool
	detail string
}

// grid lays the matrix out as rows of cells, the header first.
func (m matrix) grid() [][]svgCell {
	head := []string{"GRAPH", "READY", "REVISION"}
	head = append(head, m.clusters...)
	if m.hidden > 0 {
		head = append(head, "OTHERS")
	}
	var out [][]svgCell
	var hr []svgCell
	for _, h := range head {
		hr = append(hr, svgCell{lines: []string{h}, fill: "#e6e6e6", bold: true})
	}
	out = append(out, hr)
	for _, r := range m.rows {
		row := []svgCell{
			{lines: []string{r.graph, r.counts}, fill: absentColor, bold: true},
			{lines: []string{r.ready}, fill: colors[r.readyTone]},
			{lines: []string{r.revision}, fill: absentColor},
		}
		for _, c := range r.cells {
			if len(c.lines) == 0 {
				row = append(row, svgCell{lines: []string{"·"}, fill: absentColor})
				continue
			}
			row = append(row, svgCell{lines: c.lines, fill: colors[c.tone], detail: c.detail})
		}
		if m.hidden > 0 {
			row = append(row, svgCell{lines: []string{r.others}, fill: absentColor})
		}
		out = append(out, row)
	}
	if len(m.rows) == 0 {
		out = append(out, []svgCell{{lines: []string{"No ResourceGraphDefinitions on the hub."}, fill: absentColor}})
		for len(out[1]) < len(out[0]) {
			out[1] = append(out[1], svgCell{fill: absentColor})
		}
	}
	return out
}

func writeSVGCell(b *strings.Builder, c svgCell, x, y, w, h int) {
	b.WriteString("<g>")
	if c.detail != "" {
		fmt.Fprintf(b, "<title>%s</title>", htmlEscape(c.detail))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#999999"/>`, x, y, w, h, c.fill)
	for i, l := range c.lines {
		weight := ""
		if c.bold && i == 0 {
			weight = ` font-weight="bold"`
		}
		fmt.Fprintf(b, `<text x="%d" y="%d"%s>%s</text>`, x+svgPad, y+svgPad+svgFont+i*svgLine-2, weight, htmlEscape(l))
	}
	b.WriteString("</g>\n")
}
