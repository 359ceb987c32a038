package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/hold"
)

// holdTargets are the clusters a hold or release command names: by name
// (--cluster, repeatable) or by label selector (--selector), one of them.
type holdTargets struct {
	clusters []string
	selector string
}

func (t *holdTargets) bind(g *globals, cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&t.clusters, "cluster", nil, "a cluster the rollout places, by the provider's name for it (repeat or separate with commas for several)")
	cmd.Flags().StringVarP(&t.selector, "selector", "l", "", "a label selector of clusters, as kubectl -l takes it (e.g. ring=canary,!gpu)")
	cmd.MarkFlagsOneRequired("cluster", "selector")
	cmd.MarkFlagsMutuallyExclusive("cluster", "selector")
	_ = cmd.RegisterFlagCompletionFunc("cluster", completePlaced(g))
}

// completePlaced completes the clusters the rollout NAME places, as its
// status.clusters lists them.
func completePlaced(g *globals) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := g.hubClient()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ro, err := findRollout(cmd.Context(), c, args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []string
		for _, cl := range ro.Status.Clusters {
			names = append(names, cl.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// parsedSelector is --selector as a LabelSelector.
func (t *holdTargets) parsedSelector() (*metav1.LabelSelector, error) {
	sel, err := metav1.ParseToLabelSelector(t.selector)
	if err != nil {
		return nil, &exitError{code: ExitError, err: fmt.Errorf("--selector %q: %w", t.selector, err)}
	}
	return sel, nil
}

// what names the targets in the command's output.
func (t *holdTargets) what() string {
	if t.selector != "" {
		return fmt.Sprintf("clusters matching %q", t.selector)
	}
	return strings.Join(t.clusters, ", ")
}

func newRolloutHoldCommand(g *globals, name string) *cobra.Command {
	var targets holdTargets
	var reason string
	cmd := &cobra.Command{
		Use:   "hold NAME (--cluster CLUSTER... | --selector SELECTOR) --reason REASON",
		Short: "Pin clusters to the revision each serves (spec.holds)",
		Long: `Add a hold to spec.holds: the clusters it takes stay on the revision each
serves when the hub first sees the hold, and the rollout goes on without
them. --cluster names clusters (a hold listing those not held by name
yet): each must be one the rollout places, as the hub lists them in the
GraphRollout's status.clusters, or the command fails and changes nothing;
--selector takes the placed clusters whose labels match, as labels
change. The hub records each pin in status.clusters (held, desired), which
rollout status shows. It is the edit Hub.Hold makes from Go.`,
		Example: example(name, `  fleetgraph rollout hold webapp --cluster eu-1 --reason "customer freeze"
  fleetgraph rollout hold webapp --cluster eu-1,eu-2 --reason "change window"
  fleetgraph rollout hold webapp --selector freeze=true --reason "frozen by label"`),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRollouts(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			edit := func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error) {
				return hold.Clusters(ro, targets.clusters, reason)
			}
			if targets.selector != "" {
				sel, err := targets.parsedSelector()
				if err != nil {
					return err
				}
				edit = func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error) {
					holds, changed := hold.Selector(ro, sel, reason)
					return holds, changed, nil
				}
			}
			return runHoldEdit(cmd.Context(), g, args[0], "held "+targets.what(), edit)
		},
	}
	targets.bind(g, cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why, shown in status and events (at most 256 characters)")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

func newRolloutReleaseCommand(g *globals, name string) *cobra.Command {
	var targets holdTargets
	cmd := &cobra.Command{
		Use:   "release NAME (--cluster CLUSTER... | --selector SELECTOR)",
		Short: "Let held clusters catch up with the rollout (spec.holds)",
		Long: `Take clusters out of spec.holds: each catches up through the rollout's
waves, at once if its wave has already taken the revision being rolled out.
--cluster takes the named clusters out of every hold that names them (a
hold left naming none goes); it fails, changing nothing, for a cluster no
hold names: one that a selector holds (release that hold with --selector),
one the rollout does not place, or one not held at all. --selector removes the holds whose selector is
that one. It is the edit Hub.Release makes from Go.`,
		Example: example(name, `  fleetgraph rollout release webapp --cluster eu-1
  fleetgraph rollout release webapp --selector freeze=true`),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRollouts(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			edit := func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error) {
				holds, err := hold.Release(ro, targets.clusters, heldBySelector(ro))
				return holds, err == nil, err
			}
			if targets.selector != "" {
				sel, err := targets.parsedSelector()
				if err != nil {
					return err
				}
				edit = func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error) {
					holds, err := hold.ReleaseSelector(ro, sel)
					return holds, err == nil, err
				}
			}
			return runHoldEdit(cmd.Context(), g, args[0], "released "+targets.what(), edit)
		},
	}
	targets.bind(g, cmd)
	return cmd
}

// runHoldEdit edits the holds of the rollout named name (or ruling the
// graph so named) as Hub.Hold and Hub.Release do, and says what it did.
func runHoldEdit(ctx context.Context, g *globals, name, done string, edit func(*fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error)) error {
	c, err := g.hubClient()
	if err != nil {
		return err
	}
	var ro *fgv1alpha1.GraphRollout
	changed := false
	err = hold.Edit(ctx, c, func(ctx context.Context) (*fgv1alpha1.GraphRollout, error) {
		var err error
		ro, err = findRollout(ctx, c, name)
		return ro, err
	}, func(r *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error) {
		holds, ch, err := edit(r)
		changed = ch
		return holds, ch, err
	})
	switch {
	case errors.Is(err, hold.ErrHeldBySelector):
		return failed("%w (release it with --selector, or edit that hold in spec.holds)", err)
	case errors.Is(err, hold.ErrNotHeld), errors.Is(err, hold.ErrUnknownCluster):
		return failed("%w", err)
	case err != nil:
		return err
	}
	if !changed {
		done = "already " + done
	}
	fmt.Fprintf(g.streams.Out, "graphrollout.%s/%s %s\n", fgv1alpha1.GroupVersion.Group, ro.Name, done)
	return nil
}

// heldBySelector says, for a cluster no hold of ro names, whether a
// selector holds it, as far as the hub has recorded: the command does not
// know the clusters' labels, the hub's status does (status.clusters[].held).
func heldBySelector(ro *fgv1alpha1.GraphRollout) func(string) bool {
	return func(cluster string) bool {
		selectors := false
		for _, h := range ro.Spec.Holds {
			selectors = selectors || h.ClusterSelector != nil
		}
		for _, c := range ro.Status.Clusters {
			if selectors && c.Name == cluster && c.Held {
				return true
			}
		}
		return false
	}
}
