package status

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetgraph/fleetgraph/hub"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

func rgd(fleet *v1alpha1.FleetStatus) *v1alpha1.ResourceGraphDefinition {
	return &v1alpha1.ResourceGraphDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp"},
		Spec:       v1alpha1.ResourceGraphDefinitionSpec{Schema: v1alpha1.Schema{APIVersion: "v1alpha1", Kind: "WebApp"}},
		Status: v1alpha1.ResourceGraphDefinitionStatus{
			LastIssuedRevision: 3, Fleet: fleet,
			Conditions: []metav1.Condition{{Type: "Ready", Status: "True"}},
		},
	}
}

func render(t *testing.T, g Graph) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteGraphs(&b, &Fleet{Graphs: []Graph{g}}, Style{}))
	return b.String()
}

// serving is a record of a cluster serving rev with n instances, all ACTIVE.
func serving(name string, rev int64, n int) hub.ClusterStatus {
	return hub.ClusterStatus{Cluster: name, CRD: hub.CRDEstablished, Revision: rev, Serving: true, ServedRevision: rev, DesiredRevision: rev,
		Instances: n, ReadyInstances: n}
}

// After an automatic rollback every cluster serves the revision rolled
// back to: the view says so, as the hub does, and never calls it a
// failure to serve. Every row comes from the hub's records, a lone hub's
// included, with the revision served and desired, the counts (those in
// ERROR too) and the hub's reason.
func TestARolledBackGraphReadsAsServingTheRevisionRolledBackTo(t *testing.T) {
	why := `serving revision 2 (revision 3 rolled back: wave "canary" not healthy within 3s: spoke-1: 0 of 1 instances Ready)`
	records := map[string]hub.ClusterStatus{}
	for _, name := range []string{"spoke-1", "spoke-2", "spoke-3"} {
		cs := serving(name, 2, 1)
		cs.Revision, cs.Reason, cs.Why = 3, hub.ReasonRolledBack, why
		records[name] = cs
	}
	c3 := records["spoke-3"]
	c3.ReadyInstances, c3.ErrorInstances = 0, 1
	records["spoke-3"] = c3
	fleet := &v1alpha1.FleetStatus{Clusters: 3, Established: 3, Instances: 3, ReadyInstances: 2, ErrorInstances: 1, LatestRevision: 3,
		Revisions: []v1alpha1.RevisionClusters{{Revision: 2, Clusters: 3}}, Message: why, NotLatest: 3}
	g := sources{rgd: rgd(fleet), records: records}.graph()

	assert.Equal(t, `webapp (kro.run/v1alpha1 WebApp)  Ready=True  latest revision 3  clusters 3/3 established  instances 2/3 ready, 1 in ERROR
  `+why+`
CLUSTER  CRD          SERVED  DESIRED  INSTANCES  READY  ERRORS  REASON      MESSAGE
spoke-1  Established  2       2        1          1      0       RolledBack  serving revision 2 (revision 3 rolled back: wave "canary" n…
spoke-2  Established  2       2        1          1      0       RolledBack  serving revision 2 (revision 3 rolled back: wave "canary" n…
spoke-3  Established  2       2        1          0      1       RolledBack  serving revision 2 (revision 3 rolled back: wave "canary" n…
`, render(t, g))
	assert.NotContains(t, render(t, g), "cannot be served")
	assert.True(t, g.Clusters[0].Healthy, "the hub's verdict: it serves what it should")
}

// The JSON carries no sentinel: what the hub did not publish is absent,
// and a cluster no revision serves has no servedRevision.
func TestJSONOmitsWhatIsNotPublished(t *testing.T) {
	pending := hub.ClusterStatus{Cluster: "spoke-2", CRD: hub.CRDPending, DesiredRevision: 1, Reason: hub.ReasonGate, Why: "revision 1 not served yet: CRD Pending"}
	fleet := &v1alpha1.FleetStatus{Clusters: 3, Unhealthy: 2, UnhealthyClusters: []v1alpha1.ClusterHealth{
		{Name: "spoke-3", State: "Unreachable", Reason: "Unreachable", Message: "the cluster does not answer: GET /readyz: timeout"},
	}}
	g := sources{rgd: rgd(fleet), records: map[string]hub.ClusterStatus{"spoke-1": serving("spoke-1", 1, 2), "spoke-2": pending}}.graph()
	raw, err := json.Marshal(g)
	require.NoError(t, err)
	assert.NotRegexp(t, `:-1[,}]`, string(raw))
	var back struct {
		Clusters []map[string]any `json:"clusters"`
	}
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Len(t, back.Clusters, 3)
	assert.NotContains(t, back.Clusters[1], "servedRevision", "no revision serves spoke-2")
	assert.Equal(t, float64(1), back.Clusters[1]["desiredRevision"])
	assert.NotContains(t, back.Clusters[2], "instances", "no record of spoke-3: its counts are unknown")
	assert.Equal(t, "Unreachable", back.Clusters[2]["reason"])
}

// With hub replicas, a cluster whose replica stopped still has that
// replica's last record; the RGD, which the hub writes from every record
// merged, says the replica is gone, and the view shows that.
func TestAStoppedReplicasClusterShowsAsSuch(t *testing.T) {
	gone := "hub replica r-1, which served the cluster, stopped (its Lease expired); no other replica has taken the cluster over yet. As it last saw it: CRD Established, 1 of 1 instances ready"
	fleet := &v1alpha1.FleetStatus{Clusters: 2, Established: 2, Unhealthy: 1, UnhealthyClusters: []v1alpha1.ClusterHealth{
		{Name: "spoke-2", State: "Established", Reason: string(hub.ReasonReplicaGone), ServedRevision: 1, DesiredRevision: 1, Message: gone},
	}}
	g := sources{rgd: rgd(fleet), records: map[string]hub.ClusterStatus{"spoke-1": serving("spoke-1", 1, 1), "spoke-2": serving("spoke-2", 1, 1)}}.graph()
	require.Len(t, g.Clusters, 2, "each cluster once")
	assert.Equal(t, "ReplicaGone", g.Clusters[1].Reason)
	assert.Equal(t, gone, g.Clusters[1].Why)
	assert.False(t, g.Clusters[1].Healthy)
	assert.Equal(t, "", g.Clusters[0].Reason)
}

// A hub graph's instances live on the hub; the view lists the clusters
// they write to, with how many have children there, are ready, in ERROR
// or waiting, in their deletion, for a cluster that does not answer.
func TestAHubGraphShowsItsTargets(t *testing.T) {
	fleet := &v1alpha1.FleetStatus{Clusters: 1, Established: 1, Instances: 2, ReadyInstances: 1, TargetClusters: 2, Targets: []v1alpha1.TargetHealth{
		{Name: "spoke-1", Instances: 2, ReadyInstances: 1, Engaged: true},
		{Name: "spoke-2", Instances: 1, Deleting: 1, Engaged: true, Unreachable: "GET /readyz: context deadline exceeded"},
	}}
	g := sources{rgd: rgd(fleet), records: map[string]hub.ClusterStatus{"": serving("", 1, 0)}}.graph()
	out := render(t, g)
	assert.Contains(t, out, `TARGET   INSTANCES  READY  ERRORS  DELETING  ENGAGED  REACHABLE
spoke-1  2          1      0       0         yes      yes
spoke-2  1          0      0       1         yes      no: GET /readyz: context deadline exceeded
`)
	assert.Contains(t, out, "instances 1/2 ready")
}

// The wave and the hold come from the GraphRollout; the revisions from
// the hub's records, never from the rollout's spec.
func TestTheRolloutNamesWavesAndHolds(t *testing.T) {
	ro := &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp"},
		Spec:       fgv1alpha1.GraphRolloutSpec{Graph: "webapp", Waves: []fgv1alpha1.Wave{{Name: "canary", Clusters: 1}, {Name: "rest", Percent: 100}}},
		Status: fgv1alpha1.GraphRolloutStatus{
			Phase: fgv1alpha1.RolloutProgressing, TargetRevision: 3, StableRevision: 2, Wave: 1, WaveName: "rest",
			Clusters: []fgv1alpha1.RolloutCluster{{Name: "spoke-1", Wave: 0, Revision: 3}, {Name: "spoke-2", Wave: 1, Revision: 2, Held: true, Desired: 2}},
		},
	}
	held := serving("spoke-2", 2, 1)
	held.Reason, held.Why = hub.ReasonHeld, "serving revision 2 (held at revision 2: freeze)"
	g := sources{rgd: rgd(&v1alpha1.FleetStatus{Clusters: 2}), rollout: ro,
		records: map[string]hub.ClusterStatus{"spoke-1": serving("spoke-1", 3, 1), "spoke-2": held}}.graph()
	assert.Equal(t, "canary", g.Clusters[0].Wave)
	assert.Equal(t, "rest", g.Clusters[1].Wave)
	assert.True(t, g.Clusters[1].Held)
	var b bytes.Buffer
	require.NoError(t, WriteGraphs(&b, &Fleet{Graphs: []Graph{g}}, Style{Wide: true, Now: func() time.Time { return time.Time{} }}))
	assert.Regexp(t, `(?m)^spoke-2\s+Established\s+2\s+2\s+1\s+1\s+0\s+Held\s+rest\s+yes\s+-\s+record\s+serving revision 2 \(held at revision 2: freeze\)$`, b.String())
}
