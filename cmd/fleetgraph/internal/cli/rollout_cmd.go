package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// AnnotationApprove, set on a GraphRollout, approves the wave (by name) or
// the revision (by number) it names, on hubs with approval gates.
const AnnotationApprove = "fleetgraph.dev/approve"

func newRolloutCommand(g *globals, name string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show and steer GraphRollouts: status, pause, resume, rollback, approve, hold, release",
		Long: `Show and steer the GraphRollout that rolls a graph's revisions out in waves.
NAME is the GraphRollout's name or the graph's (the RGD's) name; for a graph,
the oldest GraphRollout naming it is the one the hub follows.

Each subcommand makes the change the README documents, on the hub cluster:
pause and resume set spec.paused (resume also sets the fleetgraph.dev/resume
annotation when the rollout failed, which retries the failed wave), rollback
sets spec.rollbackTo, approve sets the fleetgraph.dev/approve annotation,
hold and release edit spec.holds.`,
		Example: example(name, `  fleetgraph rollout status webapp --watch --timeout 10m
  fleetgraph rollout pause webapp
  fleetgraph rollout rollback webapp --to-revision 1
  fleetgraph rollout hold webapp --cluster eu-1 --reason "customer freeze"`),
	}
	cmd.AddCommand(
		newRolloutStatusCommand(g, name),
		rolloutAction(g, name, "pause", "Hold the rollout at the wave it reached (spec.paused)", `  fleetgraph rollout pause webapp`, pause),
		rolloutAction(g, name, "resume", "Go on from where the rollout was paused, or retry its failed wave", `  fleetgraph rollout resume webapp`, resume),
		newRolloutRollbackCommand(g, name),
		newRolloutApproveCommand(g, name), // rollout_approve_cmd.go
		newRolloutHoldCommand(g, name),    // rollout_hold_cmd.go
		newRolloutReleaseCommand(g, name), // rollout_hold_cmd.go
	)
	return cmd
}

// findRollout returns the GraphRollout named name or, failing that, the one
// that rules the graph named name.
func findRollout(ctx context.Context, c client.Client, name string) (*fgv1alpha1.GraphRollout, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	err := c.Get(ctx, client.ObjectKey{Name: name}, u)
	if err == nil {
		return asRollout(u)
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading GraphRollout %s: %w", name, err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind + "List"))
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing GraphRollouts: %w", err)
	}
	var found *fgv1alpha1.GraphRollout
	for i := range list.Items {
		ro, err := asRollout(&list.Items[i])
		if err != nil || ro.Spec.Graph != name {
			continue
		}
		if found == nil || ro.CreationTimestamp.Before(&found.CreationTimestamp) ||
			(ro.CreationTimestamp.Equal(&found.CreationTimestamp) && ro.Name < found.Name) {
			found = ro
		}
	}
	if found == nil {
		return nil, failed("no GraphRollout is named %q or rolls out a graph of that name", name)
	}
	return found, nil
}

func asRollout(u *unstructured.Unstructured) (*fgv1alpha1.GraphRollout, error) {
	ro := &fgv1alpha1.GraphRollout{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ro); err != nil {
		return nil, fmt.Errorf("decoding GraphRollout %s: %w", u.GetName(), err)
	}
	return ro, nil
}

// fieldManager is the field manager the CLI writes GraphRollouts as; the
// hub names it as the approver of an approval.
const fieldManager = "fleetgraph-cli"

// patchRollout merges patch into the GraphRollout.
func patchRollout(ctx context.Context, c client.Client, ro *fgv1alpha1.GraphRollout, patch map[string]any) error {
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName(ro.Name)
	if err := c.Patch(ctx, u, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("patching GraphRollout %s: %w", ro.Name, err)
	}
	return nil
}

// action changes one rollout and says what it did.
type action func(ctx context.Context, c client.Client, ro *fgv1alpha1.GraphRollout) (string, error)

func rolloutAction(g *globals, name, use, short, ex string, act action) *cobra.Command {
	return &cobra.Command{
		Use:               use + " NAME",
		Short:             short,
		Example:           example(name, ex),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRollouts(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAction(cmd.Context(), g, args[0], act)
		},
	}
}

func runAction(ctx context.Context, g *globals, name string, act action) error {
	c, err := g.hubClient()
	if err != nil {
		return err
	}
	ro, err := findRollout(ctx, c, name)
	if err != nil {
		return err
	}
	done, err := act(ctx, c, ro)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.streams.Out, "graphrollout.%s/%s %s\n", fgv1alpha1.GroupVersion.Group, ro.Name, done)
	return nil
}

func pause(ctx context.Context, c client.Client, ro *fgv1alpha1.GraphRollout) (string, error) {
	if ro.Spec.Paused {
		return "already paused", nil
	}
	return "paused", patchRollout(ctx, c, ro, map[string]any{"spec": map[string]any{"paused": true}})
}

func resume(ctx context.Context, c client.Client, ro *fgv1alpha1.GraphRollout) (string, error) {
	patch := map[string]any{"spec": map[string]any{"paused": nil}}
	what := "resumed"
	// Only a failed rollout gets the annotation: one left behind would
	// retry a later failure at once.
	if ro.Status.Phase == fgv1alpha1.RolloutFailed {
		patch["metadata"] = map[string]any{"annotations": map[string]any{fgv1alpha1.AnnotationResume: time.Now().UTC().Format(time.RFC3339Nano)}}
		what = fmt.Sprintf("resumed (retrying wave %q)", ro.Status.WaveName)
	} else if !ro.Spec.Paused {
		return "not paused", nil
	}
	return what, patchRollout(ctx, c, ro, patch)
}

func newRolloutRollbackCommand(g *globals, name string) *cobra.Command {
	var to int64
	var clear, inWaves bool
	cmd := &cobra.Command{
		Use:   "rollback NAME",
		Short: "Serve one revision on every placed cluster, at once or in waves (spec.rollbackTo)",
		Long: `Set spec.rollbackTo: every cluster the rollout places serves that revision at
once, and the rollout stops there. --in-waves sets spec.rollbackStrategy to
Waves instead: the revision goes through the rollout's waves, first wave
first, each behind its approval, maxConcurrency and health gates.
--to-revision defaults to the stable revision, the one the last complete
rollout reached. --clear removes it: the latest revision is rolled out again
from the first wave.`,
		Example: example(name, `  fleetgraph rollout rollback webapp
  fleetgraph rollout rollback webapp --to-revision 3
  fleetgraph rollout rollback webapp --to-revision 3 --in-waves
  fleetgraph rollout rollback webapp --clear`),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRollouts(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAction(cmd.Context(), g, args[0], func(ctx context.Context, c client.Client, ro *fgv1alpha1.GraphRollout) (string, error) {
				if clear {
					return "rollback cleared", patchRollout(ctx, c, ro, map[string]any{"spec": map[string]any{"rollbackTo": nil, "rollbackStrategy": nil}})
				}
				rev := to
				if rev == 0 {
					rev = ro.Status.StableRevision
				}
				if rev <= 0 {
					return "", failed("GraphRollout %s has no stable revision yet: give --to-revision", ro.Name)
				}
				if err := revisionExists(ctx, c, ro.Spec.Graph, rev); err != nil {
					return "", err
				}
				spec := map[string]any{"rollbackTo": rev, "rollbackStrategy": nil}
				what := fmt.Sprintf("rolled back to revision %d", rev)
				if inWaves {
					spec["rollbackStrategy"] = fgv1alpha1.RollbackInWaves
					what = fmt.Sprintf("rolling back to revision %d in waves", rev)
				}
				return what, patchRollout(ctx, c, ro, map[string]any{"spec": spec})
			})
		},
	}
	cmd.Flags().Int64Var(&to, "to-revision", 0, "the revision to serve (default: the rollout's stable revision)")
	cmd.Flags().BoolVar(&clear, "clear", false, "remove spec.rollbackTo and roll the latest revision out again")
	cmd.Flags().BoolVar(&inWaves, "in-waves", false, "go through the rollout's waves, first wave first (spec.rollbackStrategy: Waves)")
	cmd.MarkFlagsMutuallyExclusive("to-revision", "clear")
	cmd.MarkFlagsMutuallyExclusive("in-waves", "clear")
	return cmd
}

// revisionExists fails when the graph has no GraphRevision of that number.
func revisionExists(ctx context.Context, c client.Client, graph string, rev int64) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRevisionKind))
	err := c.Get(ctx, client.ObjectKey{Name: fgv1alpha1.RevisionName(graph, rev)}, u)
	if apierrors.IsNotFound(err) {
		return failed("graph %s has no revision %d (no GraphRevision %s)", graph, rev, fgv1alpha1.RevisionName(graph, rev))
	}
	return err
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

// holdLabel names what a hold takes.
func holdLabel(h fgv1alpha1.Hold) string {
	if h.ClusterSelector != nil {
		return fmt.Sprintf("clusters matching %q", metav1.FormatLabelSelector(h.ClusterSelector))
	}
	return strings.Join(h.Clusters, ", ")
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// completeRollouts completes the hub's GraphRollout names.
func completeRollouts(g *globals) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := g.hubClient()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind + "List"))
		if err := c.List(cmd.Context(), list); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []string
		for _, u := range list.Items {
			names = append(names, u.GetName())
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
