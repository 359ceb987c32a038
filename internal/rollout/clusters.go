package rollout

import (
	"slices"
	"strings"
	"unicode/utf8"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// clusterFacts are what describeClusters describes the clusters from.
type clusterFacts struct {
	// waves are the placed clusters' waves (held and other replicas'
	// clusters included), obs what the hub observes of them.
	waves map[string]int32
	obs   map[string]Observation
	// held and pinned are the held clusters' reasons and pins (hold.go).
	held   map[string]string
	pinned map[string]int64
	// foreign are the stored entries of the clusters other replicas
	// serve, listed as they are (replicas.go).
	foreign map[string]fgv1alpha1.RolloutCluster
	// before is status.clusters as read.
	before []fgv1alpha1.RolloutCluster
}

// describeClusters rewrites status.clusters after a step: every placed
// cluster, held ones included, with its wave, the revision serving it,
// the revision the rollout wants there, the revision it failed and why,
// and its hold. A cluster that waits gives the reason the wave in
// progress waits for it. Another replica's cluster is listed as the
// status listed it. A cluster no revision serves yet, which the status
// listed as serving one (the hub restarted, or took the cluster over from
// another replica, and its gate has not passed there yet), keeps that
// revision: its instances and children on the cluster are still that
// revision's.
func describeClusters(st *fgv1alpha1.GraphRolloutStatus, spec fgv1alpha1.GraphRolloutSpec, f clusterFacts) {
	p := planOf(&fgv1alpha1.GraphRollout{Spec: spec, Status: *st})
	failed := clustersByName(st.Failed)
	prev := clustersByName(f.before)
	waiting := waitingClusters(st, prev)
	names := sortedKeys(f.waves)
	for name := range f.foreign {
		if _, ok := f.waves[name]; !ok {
			names = append(names, name) // held: in no wave
		}
	}
	out := make([]fgv1alpha1.RolloutCluster, 0, len(names))
	for _, name := range names {
		if c, theirs := f.foreign[name]; theirs {
			if w, ok := waiting[name]; ok && !c.Held {
				c.Message = w.Message
			}
			out = append(out, c)
			continue
		}
		o := f.obs[name]
		c := fgv1alpha1.RolloutCluster{Name: name, Wave: f.waves[name], Revision: o.Revision}
		if was, listed := prev[name]; listed && !o.Serving && c.Revision == 0 {
			c.Revision = was.Revision
		}
		fl, isFailed := failed[name]
		reason, isHeld := f.held[name]
		switch {
		case isHeld:
			c.Held, c.HoldReason, c.Desired = true, reason, f.pinned[name]
		case isFailed && !allAtOnce(spec):
			c.Desired, c.FailedRevision, c.Message = fl.Revision, st.TargetRevision, fl.Message
		case p.decideOn(name, st.TargetRevision, c.Wave) == nil:
			c.Desired = st.TargetRevision
		case p.back > 0 && c.Wave >= p.backFrom:
			c.Desired = p.back // an automatic rollback sends it back
		case c.Revision > 0:
			c.Desired = c.Revision
		default:
			c.Desired = st.StableRevision
		}
		if !c.Held && c.FailedRevision == 0 {
			c.Message = waiting[name].Message // why it waits, whatever the wait
		}
		out = append(out, c)
	}
	sortClusters(out)
	if len(out) == 0 {
		out = nil
	}
	st.Clusters = out
}

// waitingClusters are the clusters holding the wave in progress back, by
// name. A step lists them all; a status no step rewrote (a refused health
// condition freezes it) holds the bounded list as stored, and then the
// entries past its bound keep the why status.clusters gave them (prev).
func waitingClusters(st *fgv1alpha1.GraphRolloutStatus, prev map[string]fgv1alpha1.RolloutCluster) map[string]fgv1alpha1.RolloutCluster {
	waiting := clustersByName(st.HoldingBack)
	if int(st.HoldingBackCount) <= len(st.HoldingBack) {
		return waiting
	}
	for name, c := range prev {
		if _, listed := waiting[name]; !listed && c.Message != "" && !c.Held && c.FailedRevision == 0 {
			waiting[name] = c
		}
	}
	return waiting
}

// maxMessageBytes bounds the bytes of the messages one list of the status
// carries in all (status.clusters, status.failed): a wave of 10,000
// clusters, each refused with a long message a spoke wrote, would
// otherwise pass what etcd stores, and the rollout could write no status.
const maxMessageBytes = 128 << 10

// minMessageBytes is the shortest a message is cut to.
const minMessageBytes = 32

// listBounded bounds status.holdingBack to its first
// MaxHoldingBackListed entries (status.holdingBackCount keeps the number
// and status.clusters each one's why), and the messages of
// status.clusters and status.failed to maxMessageBytes per list.
func listBounded(st *fgv1alpha1.GraphRolloutStatus) {
	// A status no step rewrote since an older hub wrote it lists every
	// waiting cluster and counts none.
	st.HoldingBackCount = max(st.HoldingBackCount, int32(len(st.HoldingBack)))
	if len(st.HoldingBack) > fgv1alpha1.MaxHoldingBackListed {
		st.HoldingBack = st.HoldingBack[:fgv1alpha1.MaxHoldingBackListed]
	}
	boundMessages(st.Clusters)
	boundMessages(st.Failed)
}

// boundMessages cuts cs's messages to an equal share of maxMessageBytes
// (at least minMessageBytes) when together they pass it. A message cut
// stays non-empty: a cluster that waits still waits for the replicas that
// read it.
func boundMessages(cs []fgv1alpha1.RolloutCluster) {
	total := 0
	for _, c := range cs {
		total += len(c.Message)
	}
	if total <= maxMessageBytes {
		return
	}
	each := max(minMessageBytes, maxMessageBytes/len(cs))
	for i := range cs {
		cs[i].Message = shorten(cs[i].Message, each)
	}
}

// shorten cuts s to at most n bytes, on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	const mark = "…"
	if len(s) <= n {
		return s
	}
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// sortClusters sorts clusters by name.
func sortClusters(cs []fgv1alpha1.RolloutCluster) {
	slices.SortFunc(cs, func(a, b fgv1alpha1.RolloutCluster) int { return strings.Compare(a.Name, b.Name) })
}
