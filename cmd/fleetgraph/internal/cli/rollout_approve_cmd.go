package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

func newRolloutApproveCommand(g *globals, name string) *cobra.Command {
	var wave string
	var revision int64
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Approve a wave that waits for approval, or a revision",
		Long: `Set the annotation ` + AnnotationApprove + ` on the GraphRollout: to the wave
that awaits approval (status.awaitingApproval), to the wave --wave names, or
to the revision --revision names (every wave of it). The hub records the
approval in status.approvals and removes the annotation.

The command refuses, with exit code 1 and changing nothing, an approval
that could approve nothing: with neither flag, when no wave awaits
approval; --wave of a wave the rollout does not have, of one that requires
no approval (spec.waves[].approval is not Required), or of one the
revision being rolled out has already reached; --revision of a revision
the graph does not have, or of one older than the one being rolled out,
or when no wave requires approval. It says "already approved" when the
hub has recorded that approval.`,
		Example: example(name, `  fleetgraph rollout approve webapp
  fleetgraph rollout approve webapp --wave production
  fleetgraph rollout approve webapp --revision 4`),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRollouts(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAction(cmd.Context(), g, args[0], func(ctx context.Context, c client.Client, ro *fgv1alpha1.GraphRollout) (string, error) {
				a, err := decideApproval(ro, wave, revision)
				if err != nil {
					return "", err
				}
				if a.revisionOnly {
					if err := revisionExists(ctx, c, ro.Spec.Graph, revision); err != nil {
						return "", err
					}
				}
				if a.done {
					return "already approved " + a.what, nil
				}
				patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationApprove: a.value}}}
				return "approved " + a.what, patchRollout(ctx, c, ro, patch)
			})
		},
	}
	cmd.Flags().StringVar(&wave, "wave", "", "the wave to approve, by name (default: the wave that awaits approval)")
	cmd.Flags().Int64Var(&revision, "revision", 0, "the revision to approve, every wave of it")
	cmd.MarkFlagsMutuallyExclusive("wave", "revision")
	return cmd
}

// approval is what rollout approve sets, and what it says it did.
type approval struct {
	// value is the annotation's value.
	value string
	// what names the approval: wave "x" (of revision n), revision n.
	what string
	// revisionOnly: the value is a revision number, to check exists.
	revisionOnly bool
	// done: the hub has recorded this approval already.
	done bool
}

// decideApproval decides, from what the hub published of the rollout,
// what approving wave (by name) or revision (by number) means, or why it
// would approve nothing; with neither, the wave that awaits approval.
func decideApproval(ro *fgv1alpha1.GraphRollout, wave string, revision int64) (approval, error) {
	st := ro.Status
	if revision != 0 {
		return approveRevision(ro, revision)
	}
	if st.Phase == "" {
		return approval{}, failed("the hub has published no status of GraphRollout %s yet: no wave awaits approval", ro.Name)
	}
	if wave == "" {
		if st.AwaitingApproval == "" {
			return approval{}, failed("nothing awaits approval in GraphRollout %s (%s)", ro.Name, where(ro))
		}
		wave = st.AwaitingApproval
	}
	names := waveNames(ro)
	i := slices.Index(names, wave)
	what := fmt.Sprintf("wave %q of revision %d", wave, st.TargetRevision)
	switch {
	case i < 0:
		return approval{}, failed("GraphRollout %s has no wave %q (its waves: %s)", ro.Name, wave, strings.Join(names, ", "))
	case i >= len(ro.Spec.Waves) || ro.Spec.Waves[i].Approval != fgv1alpha1.ApprovalRequired:
		return approval{}, failed("wave %q of GraphRollout %s requires no approval (spec.waves[%d].approval is not %s)", wave, ro.Name, i, fgv1alpha1.ApprovalRequired)
	case recorded(st, st.TargetRevision, wave):
		return approval{value: wave, what: what, done: true}, nil
	case st.AwaitingApproval != wave && int32(i) <= st.Wave:
		return approval{}, failed("wave %q of GraphRollout %s cannot be approved: revision %d has already reached it (%s)", wave, ro.Name, st.TargetRevision, where(ro))
	}
	return approval{value: wave, what: what}, nil
}

// approveRevision decides an approval of every wave of a revision.
func approveRevision(ro *fgv1alpha1.GraphRollout, revision int64) (approval, error) {
	st := ro.Status
	what := fmt.Sprintf("revision %d", revision)
	switch {
	case revision < 0:
		return approval{}, failed("--revision %d: not a revision number", revision)
	case !slices.ContainsFunc(ro.Spec.Waves, func(w fgv1alpha1.Wave) bool { return w.Approval == fgv1alpha1.ApprovalRequired }):
		return approval{}, failed("no wave of GraphRollout %s requires approval (spec.waves[].approval)", ro.Name)
	case revision < st.TargetRevision:
		return approval{}, failed("revision %d is older than revision %d, which GraphRollout %s rolls out", revision, st.TargetRevision, ro.Name)
	}
	return approval{value: strconv.FormatInt(revision, 10), what: what, revisionOnly: true, done: recorded(st, revision, "")}, nil
}

// recorded reports whether the hub recorded an approval of wave (every
// wave, for "") of revision rev.
func recorded(st fgv1alpha1.GraphRolloutStatus, rev int64, wave string) bool {
	return slices.ContainsFunc(st.Approvals, func(a fgv1alpha1.RolloutApproval) bool {
		return a.Revision == rev && (a.Wave == "" || a.Wave == wave)
	})
}

// waveNames are the names of the rollout's waves, defaults filled in.
func waveNames(ro *fgv1alpha1.GraphRollout) []string {
	out := make([]string, waves(ro))
	for i := range out {
		out[i] = waveLabel(ro, int32(i))
	}
	return out
}

// where says where the rollout stands, for a refusal.
func where(ro *fgv1alpha1.GraphRollout) string {
	st := ro.Status
	s := fmt.Sprintf("phase %s, revision %d", dashIfEmpty(st.Phase), st.TargetRevision)
	if int(st.Wave) < waves(ro) {
		s += fmt.Sprintf(", wave %q", waveLabel(ro, st.Wave))
	}
	return s
}
