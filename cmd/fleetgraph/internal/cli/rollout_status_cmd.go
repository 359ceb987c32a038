package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

func newRolloutStatusCommand(g *globals, name string) *cobra.Command {
	var watchFlag bool
	var timeout, interval time.Duration
	var output string
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show a rollout's phase, waves and clusters; --watch waits until it ends",
		Long: `Show the rollout as the hub wrote it: its phase, target and stable
revisions, when the wave in progress started, each wave with its clusters
(how many serve the target, which failed it, with the revision each went
back to and why, which are held), every placed cluster with the revision it
serves and the one it should, the clusters holding the wave back, with why,
and the holds.

With --watch it shows each change, each under the time it was read, and ends
when the rollout of the RGD's current spec does (its generation's revision,
or spec.rollbackTo's): exit code 0 when that revision is Complete or rolled
back to by hand, 1 when it Failed, was rolled back automatically, or
--timeout passed. It never ends on an earlier revision's result: right after
an apply, it waits for the hub to record and start the new revision.`,
		Example: example(name, `  fleetgraph rollout status webapp
  kubectl apply -f webapp.yaml && fleetgraph rollout status webapp --watch --timeout 15m`),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRollouts(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "wide", "json", "yaml"); err != nil {
				return err
			}
			c, err := g.hubClient()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			return rolloutStatus(ctx, c, g.streams.Out, args[0], output, watchFlag, interval)
		},
	}
	cmd.Flags().BoolVarP(&watchFlag, "watch", "w", false, "show each change until the rollout of the RGD's current spec completes, rolls back or fails")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --watch, give up after this long (exit code 1); 0: no limit")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --watch reads the hub")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, json or yaml (default: a summary and tables)")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion("wide", "json", "yaml"))
	return cmd
}

func rolloutStatus(ctx context.Context, c client.Client, w io.Writer, name, output string, watchFlag bool, interval time.Duration) error {
	var last string
	for {
		ro, err := findRollout(ctx, c, name)
		if err != nil {
			if ctx.Err() != nil {
				return failed("GraphRollout %s did not finish in time", name)
			}
			return err
		}
		text, err := renderRollout(ro, output)
		if err != nil {
			return err
		}
		if !watchFlag {
			_, err := io.WriteString(w, text)
			return err
		}
		want, err := awaitedRevision(ctx, c, ro)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if text != last {
			if last != "" {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "--- %s\n%s", time.Now().Format(time.TimeOnly), text)
			if want.why != "" {
				fmt.Fprintf(w, "  waiting: %s\n", want.why)
			}
			last = text
		}
		if done, err := watchEnds(ro, want); done {
			return err
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return failed("GraphRollout %s did not finish in time: %s", ro.Name, dashIfEmpty(ro.Status.Phase))
			}
			return nil
		case <-time.After(interval):
		}
	}
}

// awaited is the revision --watch waits for; why, when set, says what it
// waits for before the rollout is about that revision.
type awaited struct {
	revision int64
	why      string
}

// awaitedRevision is the revision whose rollout --watch waits for: the
// one spec.rollbackTo names, else the one the hub issued for the RGD's
// current generation (by its GraphRevision); 0 for a graph with no RGD
// (registered from Go), whose rollout ends with any result.
func awaitedRevision(ctx context.Context, c client.Client, ro *fgv1alpha1.GraphRollout) (awaited, error) {
	if ro.Spec.RollbackTo > 0 {
		return awaited{revision: ro.Spec.RollbackTo}, nil
	}
	rgd := &v1alpha1.ResourceGraphDefinition{}
	err := c.Get(ctx, client.ObjectKey{Name: ro.Spec.Graph}, rgd)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return awaited{}, nil
	}
	if err != nil {
		return awaited{}, fmt.Errorf("reading ResourceGraphDefinition %s: %w", ro.Spec.Graph, err)
	}
	rev, err := revisionOfGeneration(ctx, c, ro.Spec.Graph, rgd.Generation)
	if err != nil {
		return awaited{}, err
	}
	if rev == 0 {
		return awaited{why: fmt.Sprintf("the hub has not recorded generation %d of ResourceGraphDefinition %s as a revision yet", rgd.Generation, rgd.Name)}, nil
	}
	if ro.Status.TargetRevision < rev {
		return awaited{revision: rev, why: fmt.Sprintf("the rollout has not started revision %d (generation %d of the RGD) yet", rev, rgd.Generation)}, nil
	}
	return awaited{revision: rev}, nil
}

// revisionOfGeneration is the revision the hub issued for the graph's
// spec of that generation (0: none yet).
func revisionOfGeneration(ctx context.Context, c client.Client, graph string, generation int64) (int64, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRevisionKind + "List"))
	if err := c.List(ctx, list); err != nil {
		return 0, fmt.Errorf("listing GraphRevisions: %w", err)
	}
	var out int64
	for i := range list.Items {
		rev := &fgv1alpha1.GraphRevision{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, rev) != nil {
			continue
		}
		if s := rev.Spec.Snapshot; s.Name == graph && s.Generation == generation {
			out = max(out, rev.Spec.Revision)
		}
	}
	return out, nil
}

// watchEnds reports whether --watch is done with ro, waiting for want,
// and with which result.
func watchEnds(ro *fgv1alpha1.GraphRollout, want awaited) (bool, error) {
	st := ro.Status
	if want.why != "" || st.ObservedGeneration < ro.Generation {
		return false, nil // the hub has not looked at what was asked yet
	}
	if want.revision > 0 && st.TargetRevision != want.revision {
		return false, nil
	}
	switch st.Phase {
	case fgv1alpha1.RolloutComplete:
		return true, nil
	case fgv1alpha1.RolloutRolledBack:
		if st.RollbackWave != nil {
			return true, failed("GraphRollout %s rolled revision %d back: %s", ro.Name, st.TargetRevision, st.Message)
		}
		return true, nil
	case fgv1alpha1.RolloutFailed:
		return true, failed("GraphRollout %s failed: %s", ro.Name, st.Message)
	}
	return false, nil
}

func renderRollout(ro *fgv1alpha1.GraphRollout, output string) (string, error) {
	var b strings.Builder
	switch output {
	case "json":
		err := writeJSON(&b, rolloutView(ro))
		return b.String(), err
	case "yaml":
		err := writeYAML(&b, rolloutView(ro))
		return b.String(), err
	}
	writeRolloutHeader(&b, ro)
	if err := writeWaves(&b, ro); err != nil {
		return "", err
	}
	if err := writeRolloutClusters(&b, ro); err != nil {
		return "", err
	}
	writeRolloutNotes(&b, ro)
	return b.String(), nil
}

func writeRolloutHeader(b *strings.Builder, ro *fgv1alpha1.GraphRollout) {
	st := ro.Status
	fmt.Fprintf(b, "GraphRollout %s (graph %s): %s\n", ro.Name, ro.Spec.Graph, dashIfEmpty(st.Phase))
	fmt.Fprintf(b, "  target revision %d, stable revision %d", st.TargetRevision, st.StableRevision)
	if st.WaveName != "" && int(st.Wave) < waves(ro) {
		fmt.Fprintf(b, ", wave %q (%d of %d)", st.WaveName, st.Wave+1, waves(ro))
	}
	fmt.Fprintln(b)
	if st.WaveStarted != nil {
		fmt.Fprintf(b, "  wave started %s", st.WaveStarted.UTC().Format(time.RFC3339))
		if st.HealthySince != nil {
			fmt.Fprintf(b, ", healthy since %s", st.HealthySince.UTC().Format(time.RFC3339))
		}
		fmt.Fprintln(b)
	}
	if ro.Spec.Paused {
		fmt.Fprintln(b, "  paused (spec.paused)")
	}
	if mr := st.ManualRollback; ro.Spec.RollbackTo > 0 && ro.Spec.RollbackStrategy == fgv1alpha1.RollbackInWaves && mr != nil {
		fmt.Fprintf(b, "  rolling back to revision %d in waves (spec.rollbackTo), from revision %d: wave %q\n", mr.Revision, mr.From, mr.WaveName)
	} else if ro.Spec.RollbackTo > 0 {
		fmt.Fprintf(b, "  rolled back to revision %d (spec.rollbackTo)\n", ro.Spec.RollbackTo)
	}
	if v := ro.Annotations[AnnotationApprove]; v != "" {
		fmt.Fprintf(b, "  approved: %s (%s, not recorded by the hub yet)\n", v, AnnotationApprove)
	}
	for _, a := range st.Approvals {
		what := fmt.Sprintf("wave %q of revision %d", a.Wave, a.Revision)
		if a.Wave == "" {
			what = fmt.Sprintf("revision %d", a.Revision)
		}
		fmt.Fprintf(b, "  approved: %s by %s at %s\n", what, dashIfEmpty(a.By), a.At.UTC().Format(time.RFC3339))
	}
	for _, h := range ro.Spec.Holds {
		fmt.Fprintf(b, "  hold: %s%s (spec.holds)\n", holdLabel(h), reasonSuffix(h.Reason))
	}
	if st.AwaitingApproval != "" {
		fmt.Fprintf(b, "  wave %q awaits approval (fleetgraph rollout approve)\n", st.AwaitingApproval)
	}
	if st.Message != "" {
		fmt.Fprintf(b, "  %s\n", st.Message)
	}
	for _, c := range st.Conditions {
		if c.Status != "True" {
			fmt.Fprintf(b, "  %s=%s (%s): %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
}

// writeWaves is the table of waves: each with its clusters, how many
// serve the target, and those that failed it or are held, as the status
// lists them.
func writeWaves(b *strings.Builder, ro *fgv1alpha1.GraphRollout) error {
	st := ro.Status
	if len(st.Clusters) == 0 && len(st.Failed) == 0 {
		return nil
	}
	tr := &trimmed{w: b}
	tw := tabwriter.NewWriter(tr, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "WAVE\tSTATE\tCLUSTERS\tON %d\tFAILED\tHELD\n", st.TargetRevision)
	for i := range int32(waves(ro)) {
		var total, on int
		var held []string
		for _, c := range st.Clusters {
			if c.Wave != i {
				continue
			}
			total++
			if c.Revision == st.TargetRevision {
				on++
			}
			if c.Held {
				held = append(held, c.Name)
			}
		}
		var failedHere []string
		for _, f := range st.Failed {
			if f.Wave == i {
				failedHere = append(failedHere, f.Name)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", waveLabel(ro, i), waveState(ro, i), total, on, listOrDash(failedHere), listOrDash(held))
	}
	if err := errors.Join(tw.Flush(), tr.done()); err != nil {
		return err
	}
	for _, f := range st.Failed {
		fmt.Fprintf(b, "failed: %s, wave %q: revision %d failed there, serves revision %d: %s\n",
			f.Name, waveLabel(ro, f.Wave), st.TargetRevision, f.Revision, f.Message)
	}
	for _, c := range st.Clusters {
		if c.Held {
			fmt.Fprintf(b, "held: %s, wave %q, at revision %s%s\n", c.Name, waveLabel(ro, c.Wave), revisionLabel(c.Desired), reasonSuffix(c.HoldReason))
		}
	}
	return nil
}

// waveState says where wave i stands, from the status's cursor.
func waveState(ro *fgv1alpha1.GraphRollout, i int32) string {
	st := ro.Status
	switch {
	case st.RollbackWave != nil && i >= *st.RollbackWave:
		if st.Phase == fgv1alpha1.RolloutRollingBack && i == *st.RollbackWave {
			return "going back"
		}
		return "rolled back"
	case i < st.Wave || st.Phase == fgv1alpha1.RolloutComplete:
		return "done"
	case i > st.Wave:
		return "not started"
	case st.AwaitingApproval == waveLabel(ro, i):
		return "awaits approval"
	case st.Phase == fgv1alpha1.RolloutFailed:
		return "failed"
	case st.Phase == fgv1alpha1.RolloutPaused:
		return "paused"
	}
	return "in progress"
}

// writeRolloutClusters is the table of every placed cluster.
func writeRolloutClusters(b *strings.Builder, ro *fgv1alpha1.GraphRollout) error {
	st := ro.Status
	if len(st.Clusters) == 0 {
		return nil
	}
	tr := &trimmed{w: b}
	tw := tabwriter.NewWriter(tr, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tWAVE\tREVISION\tDESIRED\tMESSAGE")
	for _, c := range st.Clusters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, waveLabel(ro, c.Wave), revisionLabel(c.Revision), revisionLabel(c.Desired), c.Message)
	}
	return errors.Join(tw.Flush(), tr.done())
}

func writeRolloutNotes(b *strings.Builder, ro *fgv1alpha1.GraphRollout) {
	for _, h := range ro.Status.HoldingBack {
		fmt.Fprintf(b, "holding back: %s: %s\n", h.Name, h.Message)
	}
	if more := int(ro.Status.HoldingBackCount) - len(ro.Status.HoldingBack); more > 0 {
		// The hub lists a bounded number; the table has each one's why.
		fmt.Fprintf(b, "holding back: %d more (the clusters above give each one's why)\n", more)
	}
	for _, m := range ro.Status.Moving {
		fmt.Fprintf(b, "moving: %s since %s\n", m.Name, m.Since.UTC().Format(time.RFC3339))
	}
}

func listOrDash(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ", ")
}

// rolloutView is what -o json and yaml print: the GraphRollout as the hub
// stores it, without server bookkeeping.
func rolloutView(ro *fgv1alpha1.GraphRollout) map[string]any {
	return map[string]any{"name": ro.Name, "annotations": ro.Annotations, "spec": ro.Spec, "status": ro.Status}
}

func waves(ro *fgv1alpha1.GraphRollout) int {
	return max(len(ro.Spec.Waves), 1)
}

func waveLabel(ro *fgv1alpha1.GraphRollout, w int32) string {
	if int(w) < len(ro.Spec.Waves) && ro.Spec.Waves[w].Name != "" {
		return ro.Spec.Waves[w].Name
	}
	return fmt.Sprintf("wave-%d", w+1)
}

func revisionLabel(r int64) string {
	if r == 0 {
		return "none"
	}
	return strconv.FormatInt(r, 10)
}
