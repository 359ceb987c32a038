package status

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Style says how to write the view.
type Style struct {
	// Color paints states: green healthy, yellow on its way, red wrong.
	Color bool
	// Wide adds the wave, the time of the last change and whole messages.
	Wide bool
	// MaxColumns is the most cluster columns the fleet matrix shows;
	// past it, only clusters with a problem get a column. Defaults to 8.
	MaxColumns int
	// Now tells the time, for ages. Defaults to time.Now.
	Now func() time.Time
}

// maxMessage is how much of a message a narrow table shows.
const maxMessage = 60

// WriteGraphs writes one table per graph: its clusters and their state.
func WriteGraphs(w io.Writer, f *Fleet, st Style) error {
	for i, g := range f.Graphs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeHeader(w, g, st)
		tr := &trimmed{w: w}
		tw := tabwriter.NewWriter(tr, 0, 4, 2, ' ', 0)
		head := "CLUSTER\tCRD\tSERVED\tDESIRED\tINSTANCES\tREADY\tERRORS\tREACHABLE"
		if st.Wide {
			head += "\tWAVE\tSINCE\tSOURCE"
		}
		fmt.Fprintln(tw, head+"\tMESSAGE")
		for _, c := range g.Clusters {
			cells := []string{
				c.Name, st.paint(dash(c.CRD), crdTone(c)), rev(c.Served), rev(c.Desired),
				num(c.Instances), num(c.ReadyInstances), num(c.ErrorInstances), st.paint(dash(c.Reachable), reachTone(c.Reachable)),
			}
			if st.Wide {
				cells = append(cells, dash(c.Wave), st.age(c.Since), c.Source)
			}
			msg := c.Message
			if !st.Wide {
				msg = shorten(msg, maxMessage)
			}
			fmt.Fprintln(tw, strings.Join(append(cells, msg), "\t"))
		}
		if err := errors.Join(tw.Flush(), tr.done()); err != nil {
			return err
		}
		if g.Unlisted > 0 {
			fmt.Fprintf(w, "and %d more %s that the hub counts as healthy but does not list (it lists every cluster only in replica status records or a GraphRollout)\n",
				g.Unlisted, pluralize(int(g.Unlisted), "cluster"))
		}
	}
	if len(f.Graphs) == 0 {
		fmt.Fprintln(w, "No ResourceGraphDefinitions on the hub.")
	}
	return nil
}

func writeHeader(w io.Writer, g Graph, st Style) {
	ready := g.Ready
	if ready == "" {
		ready = "Unknown"
	}
	fmt.Fprintf(w, "%s (%s)  Ready=%s", st.bold(g.Name), g.Kind, st.paint(ready, readyTone(ready)))
	if g.LatestRevision > 0 {
		fmt.Fprintf(w, "  revision %d", g.LatestRevision)
	}
	fmt.Fprintf(w, "  clusters %d/%d established  instances %d/%d ready\n", g.Established, g.ClusterCount, g.ReadyInstances, g.Instances)
	if g.Ready != "True" && g.Message != "" {
		fmt.Fprintf(w, "  %s: %s\n", g.Reason, g.Message)
	}
	if r := g.Rollout; r != nil {
		fmt.Fprintf(w, "  rollout %s: %s", r.Name, st.paint(dash(r.Phase), phaseTone(r.Phase)))
		if r.WaveName != "" {
			fmt.Fprintf(w, ", wave %q", r.WaveName)
		}
		fmt.Fprintf(w, ", target %d, stable %d", r.Target, r.Stable)
		if r.Message != "" {
			fmt.Fprintf(w, ": %s", r.Message)
		}
		fmt.Fprintln(w)
	}
}

// trimmed holds a table until done, then writes it without the spaces
// tabwriter leaves at the end of a line whose last cell is empty.
type trimmed struct {
	w   io.Writer
	buf bytes.Buffer
}

func (t *trimmed) Write(p []byte) (int, error) { return t.buf.Write(p) }

func (t *trimmed) done() error {
	lines := bytes.Split(t.buf.Bytes(), []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimRight(l, " ")
	}
	_, err := t.w.Write(bytes.Join(lines, []byte("\n")))
	return err
}

// WriteMatrix writes the fleet as graphs × clusters: in each cell the
// revision served (with "→N" when it should be N) or the CRD state when
// it is not established; "·" where the graph is not known there.
func WriteMatrix(w io.Writer, f *Fleet, st Style) error {
	if len(f.Graphs) == 0 {
		fmt.Fprintln(w, "No ResourceGraphDefinitions on the hub.")
		return nil
	}
	cols, hidden := st.columns(f)
	tr := &trimmed{w: w}
	tw := tabwriter.NewWriter(tr, 0, 4, 2, ' ', 0)
	head := []string{"GRAPH", "READY", "REVISION", "CLUSTERS", "INSTANCES"}
	head = append(head, cols...)
	if hidden > 0 {
		head = append(head, "OTHERS")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, g := range f.Graphs {
		ready := g.Ready
		if ready == "" {
			ready = "Unknown"
		}
		cells := []string{
			g.Name, st.paint(ready, readyTone(ready)), rev(g.LatestRevision),
			fmt.Sprintf("%d/%d", g.Established, g.ClusterCount), fmt.Sprintf("%d/%d", g.ReadyInstances, g.Instances),
		}
		byName := map[string]Cluster{}
		for _, c := range g.Clusters {
			byName[c.Name] = c
		}
		for _, name := range cols {
			c, ok := byName[name]
			if !ok {
				cells = append(cells, "·")
				continue
			}
			cells = append(cells, st.paint(cell(c), crdTone(c)))
		}
		if hidden > 0 {
			cells = append(cells, fmt.Sprintf("%d healthy", g.healthyOutside(cols)))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := errors.Join(tw.Flush(), tr.done()); err != nil {
		return err
	}
	if unlisted := f.unlisted(); unlisted > 0 {
		fmt.Fprintf(w, "%d healthy %s not listed by name (the hub lists every cluster only in replica status records or a GraphRollout)\n", unlisted, pluralize(int(unlisted), "cluster"))
	}
	return nil
}

// columns picks the matrix's cluster columns: all of them when they fit,
// else the ones with a problem somewhere.
func (st Style) columns(f *Fleet) ([]string, int) {
	max := st.MaxColumns
	if max <= 0 {
		max = 8
	}
	if len(f.Clusters) <= max {
		return f.Clusters, 0
	}
	bad := map[string]bool{}
	for _, g := range f.Graphs {
		for _, c := range g.Clusters {
			if !c.Healthy() {
				bad[c.Name] = true
			}
		}
	}
	var out []string
	for _, name := range f.Clusters {
		if bad[name] && len(out) < max {
			out = append(out, name)
		}
	}
	return out, len(f.Clusters) - len(out)
}

func (g Graph) healthyOutside(cols []string) int {
	in := map[string]bool{}
	for _, c := range cols {
		in[c] = true
	}
	n := int(g.Unlisted)
	for _, c := range g.Clusters {
		if !in[c.Name] && c.Healthy() {
			n++
		}
	}
	return n
}

func (f *Fleet) unlisted() int32 {
	var n int32
	for _, g := range f.Graphs {
		n = max(n, g.Unlisted)
	}
	return n
}

// cell is one graph on one cluster, in a few characters.
func cell(c Cluster) string {
	if c.CRD != "Established" && c.CRD != "" {
		return c.CRD
	}
	s := rev(c.Served)
	if c.Desired != Unknown && c.Served != c.Desired {
		s += "→" + rev(c.Desired)
	}
	return s
}

func rev(n int64) string {
	switch n {
	case Unknown:
		return "-"
	case 0:
		return "none"
	}
	return itoa(n)
}

func num(n int64) string {
	if n == Unknown {
		return "-"
	}
	return itoa(n)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func pluralize(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func (st Style) age(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	now := time.Now
	if st.Now != nil {
		now = st.Now
	}
	d := now().Sub(*t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
