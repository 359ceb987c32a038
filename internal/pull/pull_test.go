package pull

import (
	"bytes"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// The agents' ClusterRole the hub installs is the one config/rbac
// documents.
func TestAgentClusterRoleIsTheDocumentedOne(t *testing.T) {
	raw, err := os.ReadFile("../../config/rbac/agent.yaml")
	require.NoError(t, err)
	first := bytes.SplitN(raw, []byte("\n---\n"), 2)[0]
	doc := &rbacv1.ClusterRole{}
	require.NoError(t, yaml.UnmarshalStrict(first, doc))
	want := AgentClusterRole()
	assert.Equal(t, want.Name, doc.Name)
	assert.Equal(t, want.Rules, doc.Rules)
}

// A renewal counts from when the hub saw it, by its own clock; the first
// read of a Lease is not a renewal; and no judgement is made while the hub
// cannot read its own API server, nor within a grace after it can again.
func TestHeartbeatsAreJudgedByTheHubsClock(t *testing.T) {
	grace := 40 * time.Second
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	h := &heartbeats{grace: grace}
	h.contact(true, t0)

	h.seen("edge", t0.Add(-time.Hour), t0) // an old Lease, read at start
	a, _ := h.judge("edge", t0.Add(time.Second))
	assert.Equal(t, AvailabilityUnknown, a, "the first read is not a renewal")
	a, _ = h.judge("edge", t0.Add(grace+time.Second))
	assert.Equal(t, Unavailable, a, "no renewal within the grace")

	renew := t0.Add(50 * time.Second)
	h.seen("edge", renew.Add(-time.Hour), renew) // the agent's clock is an hour late: no matter
	a, age := h.judge("edge", renew.Add(10*time.Second))
	assert.Equal(t, Available, a)
	assert.Equal(t, 10*time.Second, age)

	lost := renew.Add(20 * time.Second)
	assert.False(t, h.contact(false, lost))
	a, _ = h.judge("edge", lost.Add(5*time.Minute))
	assert.Equal(t, AvailabilityUnknown, a, "a hub that cannot read its API server judges nothing")
	back := lost.Add(2 * time.Minute)
	assert.True(t, h.contact(true, back), "contact back after a long loss asks for a fresh read")
	a, _ = h.judge("edge", back.Add(grace-time.Second))
	assert.Equal(t, Available, a, "a full grace after the hub is back")
	a, _ = h.judge("edge", back.Add(grace+time.Second))
	assert.Equal(t, Unavailable, a)

	h.setGrace("edge", 10*time.Minute)
	a, _ = h.judge("edge", back.Add(grace+time.Second))
	assert.Equal(t, Available, a, "the PullCluster's own grace")
}

// What the API server gives back (templates re-encoded, keys sorted,
// values as numbers) is the same spec as the one written: an assignment at
// rest is never rewritten.
func TestSameSpecComparesAsJSON(t *testing.T) {
	a := fgv1alpha1.GraphAssignmentSpec{Revision: 2, Values: &apiextensionsv1.JSON{Raw: []byte(`{"b":1,"a":{"y":2,"x":1}}`)}}
	b := fgv1alpha1.GraphAssignmentSpec{Revision: 2, Values: &apiextensionsv1.JSON{Raw: []byte(`{"a": {"x": 1.0, "y": 2}, "b": 1}`)}}
	assert.True(t, SameSpec(a, b))
	assert.True(t, SameSpec(fgv1alpha1.GraphAssignmentSpec{Values: &apiextensionsv1.JSON{Raw: []byte(`{}`)}}, fgv1alpha1.GraphAssignmentSpec{}))
	b.Revision = 3
	assert.False(t, SameSpec(a, b))
	b.Revision, b.Removal = 2, fgv1alpha1.RemovalRelease
	assert.False(t, SameSpec(a, b))
}

// The availability series follows what the hub last told, and goes with
// the cluster.
func TestAvailabilitySeriesFollowsTheVerdict(t *testing.T) {
	h := &heartbeats{grace: time.Minute}
	h.contactSince = time.Now().Add(-time.Hour)
	h.seen("metrics-edge", time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
	require.True(t, h.flipped("metrics-edge"))
	assert.Equal(t, 0.0, testutil.ToFloat64(agentAvailable.WithLabelValues("metrics-edge")), "no renewal within the grace: unavailable")

	h.seen("metrics-edge", time.Now(), time.Now())
	require.True(t, h.flipped("metrics-edge"))
	assert.Equal(t, 1.0, testutil.ToFloat64(agentAvailable.WithLabelValues("metrics-edge")))

	h.forget("metrics-edge")
	assert.Zero(t, testutil.CollectAndCount(agentAvailable), "a forgotten cluster has no series")
}
