package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// complete: the rollout reached every cluster it wants to move.
func complete(st sdk.RolloutStatus) bool {
	return st.Phase == fgv1alpha1.RolloutComplete && settled(st)
}

// rolledBack: the rollout took its target back and every cluster serves
// what it should.
func rolledBack(st sdk.RolloutStatus) bool {
	return st.Phase == fgv1alpha1.RolloutRolledBack && settled(st)
}

// settled: every placed cluster serves the revision the rollout wants it
// to serve now.
func settled(st sdk.RolloutStatus) bool {
	if len(st.Clusters) != len(rings) {
		return false
	}
	for _, c := range st.Clusters {
		if c.Revision != c.Desired {
			return false
		}
	}
	return true
}

// watch prints the rollout each time it changes, from the first look
// that targets a revision after `after`, until done says so; it approves
// each wave that awaits approval, once, as `fleetgraph rollout approve`
// would. It returns the last status seen.
func (d *demo) watch(ctx context.Context, after int64, done func(sdk.RolloutStatus) bool) (sdk.RolloutStatus, error) {
	last, approved := "", map[string]bool{}
	var st sdk.RolloutStatus
	var failed error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var ok bool
		if st, ok = d.hub.Rollout(graphName); !ok || st.TargetRevision <= after {
			return false, nil
		}
		if line := d.describe(st); line != last {
			fmt.Fprintf(d.out, "    %s  %s\n", time.Now().Format("15:04:05.0"), line)
			last = line
		}
		if w := st.AwaitingApproval; w != "" && !approved[fmt.Sprint(st.TargetRevision, w)] {
			say(d.out, "Wave %s awaits approval of revision %d; the demo approves it (as `fleetgraph rollout approve %s` would).", w, st.TargetRevision, graphName)
			if failed = d.hub.Approve(ctx, graphName, w); failed != nil {
				return false, failed
			}
			approved[fmt.Sprint(st.TargetRevision, w)] = true
		}
		return done(st), nil
	})
	if err != nil {
		d.printClusters(st)
		return st, fmt.Errorf("waiting for the rollout of revision %d (%s): %w", st.TargetRevision, st.Message, err)
	}
	return st, nil
}

// describe is one line of the rollout's progress.
func (d *demo) describe(st sdk.RolloutStatus) string {
	var clusters []string
	for _, c := range st.Clusters {
		s := fmt.Sprintf("%s=r%d", c.Name, c.Revision)
		if c.Held {
			s += "(held)"
		}
		clusters = append(clusters, s)
	}
	line := fmt.Sprintf("%-11s target r%d  stable r%d  wave %-6s  %s", st.Phase, st.TargetRevision, st.StableRevision, st.WaveName, strings.Join(clusters, " "))
	if st.AwaitingApproval != "" {
		line += "  awaiting approval"
	}
	return line
}

// waveName is the name of the wave at index i of the GraphRollout.
func (d *demo) waveName(i int32) string {
	if i >= 0 && int(i) < len(d.waves) {
		return d.waves[i]
	}
	return fmt.Sprintf("wave %d", i+1)
}

// printClusters prints each cluster's wave, revision and what happened to
// it.
func (d *demo) printClusters(st sdk.RolloutStatus) {
	fmt.Fprintln(d.out)
	w := tabwriter.NewWriter(d.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tWAVE\tREVISION\tNOTE")
	for _, c := range st.Clusters {
		fmt.Fprintf(w, "%s\t%s\tr%d\t%s\n", c.Name, d.waveName(c.Wave), c.Revision, note(c))
	}
	_ = w.Flush()
	fmt.Fprintln(d.out)
}

// note says why a cluster serves what it serves, when that is not the
// rollout's target.
func note(c fgv1alpha1.RolloutCluster) string {
	switch {
	case c.Held && c.HoldReason != "":
		return fmt.Sprintf("held at r%d: %s", c.Desired, c.HoldReason)
	case c.Held:
		return fmt.Sprintf("held at r%d", c.Desired)
	case c.FailedRevision > 0:
		return fmt.Sprintf("r%d failed here: %s", c.FailedRevision, c.Message)
	}
	return c.Message
}
