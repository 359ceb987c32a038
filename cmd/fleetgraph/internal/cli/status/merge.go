package status

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/api/meta"

	"github.com/fleetgraph/fleetgraph/hub"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// sources are what the hub publishes about one graph. The view renders
// them and decides nothing: every cluster's revisions, counts and reason
// are the hub's (its records), and the graph's counts, one-line summary
// and targets are the RGD's status; the GraphRollout names waves.
type sources struct {
	rgd     *v1alpha1.ResourceGraphDefinition
	rollout *fgv1alpha1.GraphRollout
	records map[string]hub.ClusterStatus
}

func (s sources) graph() Graph {
	st := s.rgd.Status
	sch := s.rgd.Spec.Schema
	group := sch.Group
	if group == "" {
		group = "kro.run"
	}
	g := Graph{Name: s.rgd.Name, Kind: group + "/" + sch.APIVersion + " " + sch.Kind, LatestRevision: st.LastIssuedRevision}
	if c := metav1.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil {
		g.Ready = string(c.Status)
		if c.Status != "True" {
			g.Reason, g.Message = c.Reason, c.Message
		}
	}
	if f := st.Fleet; f != nil {
		g.ClusterCount, g.Established, g.Unhealthy = f.Clusters, f.Established, f.Unhealthy
		g.Instances, g.ReadyInstances, g.ErrorInstances = f.Instances, f.ReadyInstances, f.ErrorInstances
		g.Summary = f.Message
		if f.LatestRevision > g.LatestRevision {
			g.LatestRevision = f.LatestRevision
		}
		for _, r := range f.Revisions {
			g.Revisions = append(g.Revisions, RevisionCount{Revision: r.Revision, Clusters: r.Clusters})
		}
		for _, t := range f.Targets {
			g.Targets = append(g.Targets, Target{Name: t.Name, Instances: t.Instances, ReadyInstances: t.ReadyInstances,
				ErrorInstances: t.ErrorInstances, Deleting: t.Deleting, Engaged: t.Engaged, Unreachable: t.Unreachable})
		}
	}
	if ro := s.rollout; ro != nil {
		g.Rollout = &Rollout{
			Name: ro.Name, Phase: ro.Status.Phase, Target: ro.Status.TargetRevision, Stable: ro.Status.StableRevision,
			Wave: ro.Status.Wave, WaveName: ro.Status.WaveName, Paused: ro.Spec.Paused, RollbackTo: ro.Spec.RollbackTo, Message: ro.Status.Message,
		}
	}
	rows := map[string]*Cluster{}
	for name, cs := range s.records {
		rows[name] = fromRecord(cs)
	}
	s.fromFleet(rows)
	s.fromRollout(rows)
	for _, c := range rows {
		g.Clusters = append(g.Clusters, *c)
	}
	slices.SortFunc(g.Clusters, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	if n := g.ClusterCount - int32(len(g.Clusters)); n > 0 {
		g.Unlisted = n
	}
	return g
}

// fromRecord is a cluster as a hub's record says.
func fromRecord(cs hub.ClusterStatus) *Cluster {
	c := &Cluster{
		Name: cs.Cluster, CRD: string(cs.CRD), Message: cs.Message, Healthy: cs.Healthy(),
		Reason: string(cs.Reason), Why: cs.Why, HandingOver: cs.HandingOver, Reachable: reachable(string(cs.CRD)), Source: "record",
	}
	if !cs.Uncounted {
		c.Instances, c.ReadyInstances, c.ErrorInstances = ptr(int64(cs.Instances)), ptr(int64(cs.ReadyInstances)), ptr(int64(cs.ErrorInstances))
	}
	if cs.Serving {
		c.ServedRevision = ptr(cs.ServedRevision)
	}
	if cs.DesiredRevision > 0 {
		c.DesiredRevision = ptr(cs.DesiredRevision)
	}
	if !cs.Since.IsZero() {
		since := cs.Since
		c.Since = &since
	}
	return c
}

// fromFleet adds what status.fleet lists by name. The hub writes it from
// every replica's record merged, so it alone knows that a cluster's
// replica stopped: that verdict replaces the dead replica's record. A
// cluster no readable record lists gets a row from the list alone.
func (s sources) fromFleet(rows map[string]*Cluster) {
	f := s.rgd.Status.Fleet
	if f == nil {
		return
	}
	for _, list := range [][]v1alpha1.ClusterHealth{f.UnhealthyClusters, f.NotLatestClusters} {
		for _, h := range list {
			c, ok := rows[h.Name]
			if !ok {
				c = &Cluster{Name: h.Name, CRD: h.State, Reason: h.Reason, Why: h.Message, Source: "fleet", Reachable: reachable(h.State)}
				if h.State == "Updating" { // established, not switched over yet
					c.CRD = "Established"
				}
				if h.ServedRevision > 0 {
					c.ServedRevision = ptr(h.ServedRevision)
				}
				if h.DesiredRevision > 0 {
					c.DesiredRevision = ptr(h.DesiredRevision)
				}
				rows[h.Name] = c
				continue
			}
			if h.Reason == string(hub.ReasonReplicaGone) {
				c.Reason, c.Why, c.Healthy = h.Reason, h.Message, false
			}
		}
	}
}

// fromRollout names each listed cluster's wave and hold.
func (s sources) fromRollout(rows map[string]*Cluster) {
	ro := s.rollout
	if ro == nil {
		return
	}
	for _, rc := range ro.Status.Clusters {
		if c, ok := rows[rc.Name]; ok {
			c.Wave, c.Held = waveName(ro, rc.Wave), rc.Held
		}
	}
}

func waveName(ro *fgv1alpha1.GraphRollout, w int32) string {
	if int(w) < len(ro.Spec.Waves) && ro.Spec.Waves[w].Name != "" {
		return ro.Spec.Waves[w].Name
	}
	if len(ro.Spec.Waves) == 0 && w == 0 {
		return "all"
	}
	return "wave-" + itoa(int64(w)+1)
}

// reachable says whether a CRD state means the hub reaches the cluster.
func reachable(state string) string {
	switch state {
	case "Unreachable", "NotEngaged":
		return "no"
	case "":
		return ""
	}
	return "yes"
}

func ptr[T any](v T) *T { return &v }
