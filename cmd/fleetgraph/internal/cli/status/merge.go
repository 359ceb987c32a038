package status

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/api/meta"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// sources are what the hub publishes about one graph.
type sources struct {
	rgd       *v1alpha1.ResourceGraphDefinition
	revisions map[int64]int64 // generation -> revision
	rollout   *fgv1alpha1.GraphRollout
	records   map[string]recordCluster
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
		g.ClusterCount, g.Established, g.Unhealthy, g.Instances, g.ReadyInstances = f.Clusters, f.Established, f.Unhealthy, f.Instances, f.ReadyInstances
	}
	if ro := s.rollout; ro != nil {
		g.Rollout = &Rollout{
			Name: ro.Name, Phase: ro.Status.Phase, Target: ro.Status.TargetRevision, Stable: ro.Status.StableRevision,
			Wave: ro.Status.Wave, WaveName: ro.Status.WaveName, Paused: ro.Spec.Paused, RollbackTo: ro.Spec.RollbackTo, Message: ro.Status.Message,
		}
	}
	rows := map[string]*Cluster{}
	row := func(name, source string) *Cluster {
		if c, ok := rows[name]; ok {
			return c
		}
		c := &Cluster{Name: name, Served: Unknown, Desired: Unknown, Instances: Unknown, ReadyInstances: Unknown, ErrorInstances: Unknown, Source: source}
		rows[name] = c
		return c
	}
	for name, rc := range s.records {
		s.fromRecord(row(name, "record"), rc)
	}
	s.fromRollout(row)
	s.fromFleet(row)
	for _, c := range rows {
		g.Clusters = append(g.Clusters, *c)
	}
	slices.SortFunc(g.Clusters, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	if n := g.ClusterCount - int32(len(g.Clusters)); n > 0 {
		g.Unlisted = n
	}
	return g
}

func (s sources) revision(gen int64) int64 {
	if rev, ok := s.revisions[gen]; ok {
		return rev
	}
	return Unknown
}

func (s sources) fromRecord(c *Cluster, rc recordCluster) {
	c.CRD, c.Message = rc.CRD, rc.Message
	c.Instances, c.ReadyInstances = rc.Instances, rc.ReadyInstances
	if rc.ErrorInstances != nil {
		c.ErrorInstances = *rc.ErrorInstances
	}
	c.Desired = s.revision(rc.Generation)
	if rc.Revision != nil {
		c.Desired = *rc.Revision
	}
	c.Served = 0
	if rc.Serving {
		c.Served = s.revision(rc.ServedGeneration)
		if rc.ServedRevision != nil {
			c.Served = *rc.ServedRevision
		}
	}
	if !rc.Since.IsZero() {
		since := rc.Since
		c.Since = &since
	}
	c.Reachable = reachable(rc.CRD)
}

// fromRollout adds what the graph's GraphRollout says of each placed
// cluster: its wave, the revision it serves, and the one the rollout
// wants it to serve.
func (s sources) fromRollout(row func(string, string) *Cluster) {
	ro := s.rollout
	if ro == nil {
		return
	}
	for _, rc := range ro.Status.Clusters {
		c := row(rc.Name, "rollout")
		c.Wave = waveName(ro, rc.Wave)
		c.Desired = desired(ro, rc.Name, rc.Wave)
		if c.Source == "rollout" {
			c.Served = rc.Revision
			if rc.Message != "" {
				c.Message = rc.Message
			}
		}
	}
}

// desired is the revision the named cluster, of wave w, should serve.
func desired(ro *fgv1alpha1.GraphRollout, name string, w int32) int64 {
	st := ro.Status
	switch {
	case ro.Spec.RollbackTo > 0 && ro.Spec.RollbackStrategy != fgv1alpha1.RollbackInWaves:
		return ro.Spec.RollbackTo // at once; in waves it follows the waves below
	case st.RollbackWave != nil && w >= *st.RollbackWave:
		return st.StableRevision // onFailure: Rollback took the target back
	case w == st.Wave && waitsItsTurn(ro, name):
		return st.StableRevision
	case st.Phase == fgv1alpha1.RolloutComplete || st.Phase == fgv1alpha1.RolloutRolledBack || w <= st.Wave:
		return st.TargetRevision
	}
	return st.StableRevision
}

// waitsItsTurn reports whether the named cluster of the wave in progress
// waits for its turn under the wave's maxConcurrency.
func waitsItsTurn(ro *fgv1alpha1.GraphRollout, name string) bool {
	st := ro.Status
	if int(st.Wave) >= len(ro.Spec.Waves) || ro.Spec.Waves[st.Wave].MaxConcurrency == nil || st.Phase == fgv1alpha1.RolloutComplete {
		return false
	}
	for _, m := range st.Moving {
		if m.Name == name {
			return false
		}
	}
	return !slices.Contains(st.Moved, name)
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

// fromFleet adds status.fleet's unhealthy clusters and, where that list
// is complete, marks every other listed cluster as healthy.
func (s sources) fromFleet(row func(string, string) *Cluster) {
	f := s.rgd.Status.Fleet
	if f == nil {
		return
	}
	unhealthy := map[string]bool{}
	for _, h := range f.UnhealthyClusters {
		unhealthy[h.Name] = true
		c := row(h.Name, "fleet")
		if c.Source == "record" {
			continue // the record says more
		}
		c.CRD, c.Message = h.State, h.Message
		if h.State == "Updating" { // established, not switched over yet
			c.CRD = "Established"
		}
		c.Reachable = reachable(h.State)
	}
	complete := int32(len(f.UnhealthyClusters)) == f.Unhealthy
	for _, c := range s.rolloutRows(row) {
		if c.Source == "rollout" && complete && !unhealthy[c.Name] {
			// Not unhealthy and the list of unhealthy clusters is whole:
			// established, serving the latest revision.
			c.CRD, c.Reachable, c.Source = "Established", "yes", "inferred"
		}
	}
}

func (s sources) rolloutRows(row func(string, string) *Cluster) []*Cluster {
	if s.rollout == nil {
		return nil
	}
	var out []*Cluster
	for _, rc := range s.rollout.Status.Clusters {
		out = append(out, row(rc.Name, "rollout"))
	}
	return out
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
