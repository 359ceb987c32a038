package rgd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// Summary condenses s, the hub's fleet status of one graph, into the
// bounded form written to the RGD's status: counts over every cluster,
// the revisions served, one line saying what serves the fleet and why
// some clusters differ, and at most v1alpha1.MaxUnhealthyClusters
// unhealthy clusters and as many that serve another revision than the
// latest by decision (and, for a hub graph, at most v1alpha1.MaxTargets
// target clusters), so the status stays small on a fleet of thousands.
// It computes nothing the hub's status does not say: what is healthy and
// why is the hub's (hub.ClusterStatus).
func Summary(s hub.GraphStatus) *v1alpha1.FleetStatus {
	out := &v1alpha1.FleetStatus{Clusters: int32(len(s.Clusters)), LatestRevision: s.LatestRevision}
	served := map[int64]int32{}
	for _, c := range s.Clusters {
		out.Instances += int64(c.Instances)
		out.ReadyInstances += int64(c.ReadyInstances)
		out.ErrorInstances += int64(c.ErrorInstances)
		if c.CRD.Healthy() {
			out.Established++
		}
		if c.Serving {
			served[c.ServedRevision]++
		}
		switch {
		case !c.Healthy():
			out.Unhealthy++
			if len(out.UnhealthyClusters) < v1alpha1.MaxUnhealthyClusters {
				out.UnhealthyClusters = append(out.UnhealthyClusters, health(c))
			}
		case c.Reason != "":
			out.NotLatest++
			if len(out.NotLatestClusters) < v1alpha1.MaxUnhealthyClusters {
				out.NotLatestClusters = append(out.NotLatestClusters, health(c))
			}
		}
	}
	out.Revisions = revisionCounts(served)
	hubGraph(s, out)
	out.Message = message(s, out)
	return out
}

// health is c as the RGD lists it.
func health(c hub.ClusterStatus) v1alpha1.ClusterHealth {
	h := v1alpha1.ClusterHealth{Name: c.Cluster, State: stateWord(c), Reason: string(c.Reason), DesiredRevision: c.DesiredRevision, Message: c.Explain()}
	if c.Serving {
		h.ServedRevision = c.ServedRevision
	}
	return h
}

// stateWord is the word written to the RGD for a cluster listed there.
func stateWord(c hub.ClusterStatus) string {
	if c.CRD.Healthy() && (!c.Serving || c.ServedRevision != c.DesiredRevision) {
		return "Updating" // established, not switched over yet
	}
	return string(c.CRD)
}

// revisionCounts lists the revisions served, newest first, at most
// v1alpha1.MaxRevisions of them.
func revisionCounts(served map[int64]int32) []v1alpha1.RevisionClusters {
	revs := make([]int64, 0, len(served))
	for r := range served {
		revs = append(revs, r)
	}
	slices.Sort(revs)
	slices.Reverse(revs)
	out := make([]v1alpha1.RevisionClusters, 0, min(len(revs), v1alpha1.MaxRevisions))
	for _, r := range revs[:min(len(revs), v1alpha1.MaxRevisions)] {
		out = append(out, v1alpha1.RevisionClusters{Revision: r, Clusters: served[r]})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// hubGraph fills in what a hub graph has: its instances live on the hub,
// and its targets are the clusters they write to.
func hubGraph(s hub.GraphStatus, out *v1alpha1.FleetStatus) {
	if s.Targets == nil && s.Instances == 0 {
		return
	}
	out.Instances, out.ReadyInstances, out.ErrorInstances = int64(s.Instances), int64(s.ReadyInstances), int64(s.ErrorInstances)
	out.TargetClusters = int32(len(s.Targets))
	for _, t := range s.Targets[:min(len(s.Targets), v1alpha1.MaxTargets)] {
		out.Targets = append(out.Targets, v1alpha1.TargetHealth{
			Name: t.Cluster, Instances: int32(t.Instances), ReadyInstances: int32(t.ReadyInstances),
			ErrorInstances: int32(t.ErrorInstances), Deleting: int32(t.Deleting), Engaged: t.Engaged, Unreachable: t.Unreachable,
		})
	}
}

// reasonWords name the reasons in the RGD's one-line message.
var reasonWords = map[hub.Reason]string{
	hub.ReasonRollingOut:   "rolling out",
	hub.ReasonHeld:         "held",
	hub.ReasonRolledBack:   "rolled back",
	hub.ReasonFailed:       "failed their wave",
	hub.ReasonGate:         "gate not passed",
	hub.ReasonIncompatible: "incompatible",
	hub.ReasonUnreachable:  "unreachable",
	hub.ReasonReplicaGone:  "replica gone",
}

// message says in one line which revisions serve the fleet and why some
// clusters serve another than the latest. Where every cluster has the
// same story (a rollback, say), it is that story, told by the hub:
// "serving revision 2 (revision 3 rolled back: ...)".
func message(s hub.GraphStatus, out *v1alpha1.FleetStatus) string {
	if len(s.Clusters) == 0 {
		return ""
	}
	if why, same := oneStory(s.Clusters); same {
		return why
	}
	parts := make([]string, 0, len(out.Revisions))
	for _, r := range out.Revisions {
		parts = append(parts, fmt.Sprintf("%s on %d %s", revisionWord(r.Revision), r.Clusters, plural(int(r.Clusters), "cluster")))
	}
	msg := "serving " + strings.Join(parts, ", ")
	if len(parts) == 0 {
		msg = "no cluster serves the graph yet"
	}
	byReason := map[hub.Reason]int{}
	for _, c := range s.Clusters {
		if c.Reason != "" {
			byReason[c.Reason]++
		}
	}
	var why []string
	for _, r := range []hub.Reason{hub.ReasonRollingOut, hub.ReasonHeld, hub.ReasonRolledBack, hub.ReasonFailed,
		hub.ReasonGate, hub.ReasonIncompatible, hub.ReasonUnreachable, hub.ReasonReplicaGone} {
		if n := byReason[r]; n > 0 {
			why = append(why, fmt.Sprintf("%d %s", n, reasonWords[r]))
		}
	}
	if len(why) > 0 {
		msg += " (" + strings.Join(why, ", ") + ")"
	}
	return msg
}

// oneStory returns the hub's account of every cluster when they all tell
// the same one, and serve.
func oneStory(clusters []hub.ClusterStatus) (string, bool) {
	first := clusters[0]
	for _, c := range clusters {
		if c.Reason == "" || c.Reason != first.Reason || c.Why != first.Why || !c.Serving {
			return "", false
		}
	}
	return first.Why, true
}

func revisionWord(rev int64) string {
	if rev == 0 {
		return "an unnumbered revision"
	}
	return fmt.Sprintf("revision %d", rev)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
