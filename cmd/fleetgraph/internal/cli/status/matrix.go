package status

import "fmt"

// matrix is the fleet as graphs × clusters, as WriteMatrixDOT and
// WriteMatrixSVG draw it: the columns WriteMatrix shows, and in each cell
// the revision served (or the CRD state), the instances ready and in
// error, and a tone for its health.
type matrix struct {
	// clusters are the columns; hidden counts the clusters left out
	// (Style.MaxColumns), whose healthy count goes in others.
	clusters []string
	hidden   int
	rows     []matrixRow
}

type matrixRow struct {
	graph, kind, ready, revision, counts string
	readyTone                            tone
	cells                                []matrixCell
	// others is "N healthy" when columns are hidden.
	others string
}

// matrixCell is one graph on one cluster.
type matrixCell struct {
	// lines are what the cell says; none where the graph is not known
	// on the cluster.
	lines []string
	tone  tone
	// detail is the cluster's message, for a tooltip.
	detail string
}

func newMatrix(f *Fleet, st Style) matrix {
	m := matrix{}
	m.clusters, m.hidden = st.columns(f)
	for _, g := range f.Graphs {
		ready := g.Ready
		if ready == "" {
			ready = "Unknown"
		}
		row := matrixRow{
			graph: g.Name, kind: g.Kind, ready: ready, readyTone: readyTone(ready), revision: latest(g.LatestRevision),
			counts: fmt.Sprintf("%d/%d clusters, %d/%d instances ready", g.Established, g.ClusterCount, g.ReadyInstances, g.Instances),
		}
		byName := map[string]Cluster{}
		for _, c := range g.Clusters {
			byName[c.Name] = c
		}
		for _, name := range m.clusters {
			c, ok := byName[name]
			if !ok {
				row.cells = append(row.cells, matrixCell{})
				continue
			}
			row.cells = append(row.cells, cellOf(c))
		}
		if m.hidden > 0 {
			row.others = fmt.Sprintf("%d healthy", g.healthyOutside(m.clusters))
		}
		m.rows = append(m.rows, row)
	}
	return m
}

// cellOf is what the matrix says of one graph on one cluster.
func cellOf(c Cluster) matrixCell {
	detail := c.Why
	if detail == "" {
		detail = c.Message
	}
	mc := matrixCell{lines: []string{cell(c)}, tone: crdTone(c), detail: detail}
	if c.Instances != nil {
		mc.lines = append(mc.lines, fmt.Sprintf("%s/%s ready", num(c.ReadyInstances), num(c.Instances)))
	}
	if c.ErrorInstances != nil && *c.ErrorInstances > 0 {
		mc.lines = append(mc.lines, fmt.Sprintf("%d in error", *c.ErrorInstances))
		mc.tone = bad
	}
	if c.Reachable == "no" {
		mc.tone = bad
	}
	return mc
}

// colors are the fills of each tone in DOT and SVG: pale, so that text
// stays readable; they say what the terminal's colours say.
var colors = map[tone]string{plain: "#f2f2f2", good: "#d9f2d9", busy: "#fff2cc", bad: "#f8d7d7"}

// absentColor fills a cell where the graph is not known on the cluster.
const absentColor = "#ffffff"
