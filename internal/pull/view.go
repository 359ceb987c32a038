package pull

import (
	"context"
	"fmt"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/hub"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// What the hub knows of its pull clusters, from the Source's cache: the
// clusters and their labels (placement), and per graph and cluster the
// assignment, the agent's report and its heartbeat (status, rollouts).
// Before the Source has read the hub it knows none.

// started reports whether the cache was read once.
func (s *Source) started() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// pullClusters lists the PullClusters, being deleted or not.
func (s *Source) pullClusters() []fgv1alpha1.PullCluster {
	if !s.started() {
		return nil
	}
	list := &fgv1alpha1.PullClusterList{}
	if err := s.reader().List(context.Background(), list); err != nil {
		return nil
	}
	return list.Items
}

func (s *Source) clusterNames() []string {
	items := s.pullClusters()
	out := make([]string, len(items))
	for i := range items {
		out[i] = items[i].Name
	}
	return out
}

// Clusters returns the pull clusters in the fleet, sorted by name: every
// PullCluster not being deleted.
func (s *Source) Clusters() []Cluster {
	items := s.pullClusters()
	out := make([]Cluster, 0, len(items))
	for i := range items {
		if items[i].DeletionTimestamp.IsZero() {
			out = append(out, Cluster{Name: items[i].Name, Labels: items[i].Labels})
		}
	}
	slices.SortFunc(out, func(a, b Cluster) int { return compareStrings(a.Name, b.Name) })
	return out
}

// Labels returns the named pull cluster's labels, and false when there is
// no such pull cluster.
func (s *Source) Labels(cluster string) (map[string]string, bool) {
	if !s.started() {
		return nil, false
	}
	pc := &fgv1alpha1.PullCluster{}
	if err := s.reader().Get(context.Background(), client.ObjectKey{Name: cluster}, pc); err != nil {
		return nil, false
	}
	return pc.Labels, true
}

// Is reports whether the named cluster is a pull cluster (its PullCluster
// exists, being deleted or not).
func (s *Source) Is(cluster string) bool {
	_, ok := s.Labels(cluster)
	return ok
}

// View is one graph on one pull cluster as the hub knows it.
type View struct {
	Cluster string
	// Assignment is the cluster's assignment of the graph; nil when it
	// has none.
	Assignment *fgv1alpha1.GraphAssignment
	// Report is the agent's report of the graph; nil when it has none.
	Report *fgv1alpha1.GraphReportStatus
	// Availability and HeartbeatAge are the judgement of the agent's
	// heartbeat; Grace the cluster's heartbeat grace.
	Availability Availability
	HeartbeatAge time.Duration
	Grace        time.Duration
}

// Current reports whether the report is about the assignment the cluster
// has now (the agent acted on it).
func (v View) Current() bool {
	return v.Assignment != nil && v.Report != nil && v.Report.ObservedGeneration == v.Assignment.Generation
}

// Views returns the named graph on every pull cluster not being deleted
// that has an assignment or a report of it, by cluster name.
func (s *Source) Views(graph string) map[string]View {
	out := map[string]View{}
	now := time.Now()
	for _, c := range s.Clusters() {
		v := View{Cluster: c.Name, Grace: s.graceOf(c.Name)}
		ns := fgv1alpha1.PullNamespace(c.Name)
		a := &fgv1alpha1.GraphAssignment{}
		if err := s.reader().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: graph}, a); err == nil {
			v.Assignment = a
		}
		r := &fgv1alpha1.GraphReport{}
		if err := s.reader().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: graph}, r); err == nil {
			v.Report = &r.Status
		}
		if v.Assignment == nil && v.Report == nil {
			continue
		}
		v.Availability, v.HeartbeatAge = s.beats.judge(c.Name, now)
		out[c.Name] = v
	}
	return out
}

// View returns the named graph on the named pull cluster.
func (s *Source) View(graph, cluster string) (View, bool) {
	if !s.Is(cluster) {
		return View{}, false
	}
	v, ok := s.Views(graph)[cluster]
	if !ok {
		v = View{Cluster: cluster, Grace: s.graceOf(cluster)}
		v.Availability, v.HeartbeatAge = s.beats.judge(cluster, time.Now())
	}
	return v, true
}

// Status returns the named graph's state on the pull clusters, sorted by
// name: every cluster that has an assignment of it, and every
// cluster of waiting (placed there, by name, with why the revision the
// hub offers waits; "" when nothing holds it) that has neither yet.
// Clusters whose assignment is a Release (leaving the graph) are left
// out: they no longer serve it.
func (s *Source) Status(graph string, waiting map[string]string) []hub.ClusterStatus {
	views := s.Views(graph)
	out := make([]hub.ClusterStatus, 0, len(views)+len(waiting))
	for _, v := range views {
		if v.Assignment == nil || v.Assignment.Spec.Removal == fgv1alpha1.RemovalRelease {
			continue // a report alone is about an assignment that went
		}
		out = append(out, StatusOf(v))
	}
	for name, why := range waiting {
		if v, ok := views[name]; (ok && v.Assignment != nil) || !s.Is(name) {
			continue
		}
		msg := "not assigned yet"
		if why != "" {
			msg = "not assigned yet: " + why
		}
		out = append(out, hub.ClusterStatus{Cluster: name, CRD: hub.CRDPending, Message: msg})
	}
	slices.SortFunc(out, func(a, b hub.ClusterStatus) int { return compareStrings(a.Cluster, b.Cluster) })
	return out
}

// StatusOf is v as the fleet status shows a cluster: the CRD state and
// instance counts the agent reports, Pending while it has not reported on
// the revision assigned, and Unreachable (the report kept) while its
// heartbeat is missed.
func StatusOf(v View) hub.ClusterStatus {
	cs := hub.ClusterStatus{Cluster: v.Cluster, CRD: hub.CRDPending}
	if a := v.Assignment; a != nil {
		cs.Generation = a.Spec.Snapshot.Generation
		cs.Message = fmt.Sprintf("revision %d assigned; the cluster's agent has not reported on it yet", a.Spec.Revision)
	}
	if r := v.Report; r != nil {
		if v.Assignment == nil || r.AssignedRevision == v.Assignment.Spec.Revision {
			cs.CRD, cs.Message, cs.Generation = hub.CRDState(r.CRD.State), r.CRD.Message, r.CRD.Generation
			if r.CRD.Since != nil {
				cs.Since = r.CRD.Since.Time
			}
		}
		if r.Served != nil {
			cs.Serving, cs.ServedGeneration = true, r.Served.Generation
		}
		cs.Instances, cs.ReadyInstances = int(r.Instances.Total), int(r.Instances.Ready)
	}
	if v.Availability == Unavailable {
		cs.CRD, cs.Message = hub.CRDUnreachable, describe(v.Availability, v.HeartbeatAge, v.Grace)
	}
	return cs
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
