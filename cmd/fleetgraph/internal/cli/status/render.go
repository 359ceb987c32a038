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

// WriteGraphs writes one table per graph: its clusters and their state,
// and for a hub graph the clusters its instances write to.
func WriteGraphs(w io.Writer, f *Fleet, st Style) error {
	for i, g := range f.Graphs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeHeader(w, g, st)
		if err := writeClusters(w, g, st); err != nil {
			return err
		}
		if err := writeTargets(w, g, st); err != nil {
			return err
		}
		if g.Unlisted > 0 {
			fmt.Fprintf(w, "and %d more %s that the hub counts but whose records this view could not read (ConfigMaps labelled %s)\n",
				g.Unlisted, pluralize(int(g.Unlisted), "cluster"), LabelRecordOf)
		}
	}
	if len(f.Graphs) == 0 {
		fmt.Fprintln(w, "No ResourceGraphDefinitions on the hub.")
	}
	return nil
}

// writeClusters is the table of g's clusters.
func writeClusters(w io.Writer, g Graph, st Style) error {
	if len(g.Clusters) == 0 {
		return nil
	}
	tr := &trimmed{w: w}
	tw := tabwriter.NewWriter(tr, 0, 4, 2, ' ', 0)
	head := "CLUSTER\tCRD\tSERVED\tDESIRED\tINSTANCES\tREADY\tERRORS\tREASON"
	if st.Wide {
		head += "\tWAVE\tREACHABLE\tSINCE\tSOURCE"
	}
	fmt.Fprintln(tw, head+"\tMESSAGE")
	for _, c := range g.Clusters {
		cells := []string{
			c.Name, st.paint(dash(c.CRD), crdTone(c)), served(c.ServedRevision), rev(c.DesiredRevision),
			num(c.Instances), num(c.ReadyInstances), st.paint(num(c.ErrorInstances), errorTone(c.ErrorInstances)), st.paint(dash(c.Reason), reasonTone(c)),
		}
		if st.Wide {
			cells = append(cells, dash(c.Wave), st.paint(dash(c.Reachable), reachTone(c.Reachable)), st.age(c.Since), c.Source)
		}
		msg := c.Why
		if msg == "" {
			msg = c.Message
		}
		if !st.Wide {
			msg = shorten(msg, maxMessage)
		}
		fmt.Fprintln(tw, strings.Join(append(cells, msg), "\t"))
	}
	return errors.Join(tw.Flush(), tr.done())
}

// writeTargets is the table of a hub graph's target clusters.
func writeTargets(w io.Writer, g Graph, st Style) error {
	if len(g.Targets) == 0 {
		return nil
	}
	tr := &trimmed{w: w}
	tw := tabwriter.NewWriter(tr, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tINSTANCES\tREADY\tERRORS\tDELETING\tENGAGED\tREACHABLE")
	for _, t := range g.Targets {
		name, engaged, reach := t.Name, "yes", "yes"
		if name == "" {
			name = "(hub)"
		}
		if !t.Engaged {
			engaged = "no"
		}
		if t.Unreachable != "" {
			reach = "no: " + shorten(t.Unreachable, maxMessage)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", name, t.Instances, t.ReadyInstances, t.ErrorInstances, t.Deleting,
			st.paint(engaged, reachTone(map[bool]string{true: "yes", false: "no"}[t.Engaged])), st.paint(reach, reachTone(map[bool]string{true: "yes", false: "no"}[t.Unreachable == ""])))
	}
	return errors.Join(tw.Flush(), tr.done())
}

func writeHeader(w io.Writer, g Graph, st Style) {
	ready := g.Ready
	if ready == "" {
		ready = "Unknown"
	}
	fmt.Fprintf(w, "%s (%s)  Ready=%s", st.bold(g.Name), g.Kind, st.paint(ready, readyTone(ready)))
	if g.LatestRevision > 0 {
		fmt.Fprintf(w, "  latest revision %d", g.LatestRevision)
	}
	fmt.Fprintf(w, "  clusters %d/%d established  instances %d/%d ready", g.Established, g.ClusterCount, g.ReadyInstances, g.Instances)
	if g.ErrorInstances > 0 {
		fmt.Fprintf(w, ", %s", st.paint(fmt.Sprintf("%d in ERROR", g.ErrorInstances), bad))
	}
	fmt.Fprintln(w)
	if g.Summary != "" {
		fmt.Fprintf(w, "  %s\n", g.Summary)
	}
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
			g.Name, st.paint(ready, readyTone(ready)), latest(g.LatestRevision),
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
		fmt.Fprintf(w, "%d %s counted by the hub whose records this view could not read\n", unlisted, pluralize(int(unlisted), "cluster"))
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
			if !c.Healthy {
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
		if !in[c.Name] && c.Healthy {
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
	s := served(c.ServedRevision)
	if c.DesiredRevision != nil && (c.ServedRevision == nil || *c.ServedRevision != *c.DesiredRevision) {
		s += "→" + rev(c.DesiredRevision)
	}
	return s
}

// served is the revision serving a cluster: "none" while none does.
func served(n *int64) string {
	if n == nil {
		return "none"
	}
	return rev(n)
}

// rev is a revision in a cell: "-" when not published.
func rev(n *int64) string {
	if n == nil {
		return "-"
	}
	if *n == 0 {
		return "unnumbered"
	}
	return itoa(*n)
}

func num(n *int64) string {
	if n == nil {
		return "-"
	}
	return itoa(*n)
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

// latest is a graph's latest revision: "-" while it has none.
func latest(n int64) string {
	if n == 0 {
		return "-"
	}
	return itoa(n)
}
