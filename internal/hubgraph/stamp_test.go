package hubgraph

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// The stamp names only what every instance writes to whatever its spec:
// the hub and the literal targets; computed and Secret targets are left
// to the runtime, which records them before writing there.
func TestStampNamesTheLiteralClustersOnly(t *testing.T) {
	s := policyServer(t, "", Policy{})
	assert.Equal(t, []string{"", "east"}, LiteralClusters(s.g))

	policy, probe := StampPolicy(s.g)
	require.Len(t, policy, 2)
	require.Len(t, probe, 2)
	p := policy[0].(*admissionv1.MutatingAdmissionPolicy)
	assert.Equal(t, "fleetgraph-hub.ps.kro.run", p.Name)
	assert.NotEqual(t, contract.AdmissionPolicyName(s.g), p.Name, "not the spoke runtime's policy")
	expr := p.Spec.Mutations[0].ApplyConfiguration.Expression
	assert.Contains(t, expr, `"`+contract.Finalizer+`"`)
	assert.Contains(t, expr, `"`+AnnotationClusters+`": "[\"\",\"east\"]"`)
	assert.Equal(t, admissionv1.Ignore, *p.Spec.FailurePolicy, "an instance the policy cannot stamp is stamped by the runtime")
	assert.NotEqual(t, contract.AdmissionProbeName(s.g), probe[0].GetName())
}

// fakeStamp counts removals and fails the first failures of them.
type fakeStamp struct {
	removes, failures int
}

func (f *fakeStamp) Install(context.Context, *graph.Graph) {}
func (f *fakeStamp) Remove(context.Context, *graph.Graph) error {
	f.removes++
	if f.removes <= f.failures {
		return errors.New("hub not answering")
	}
	return nil
}

// A removal takes the policy off once, retrying a failure, and waits from
// when it went off; without a policy there is nothing to wait for.
func TestUnstampRemovesOnceAndSaysSinceWhen(t *testing.T) {
	ctx := context.Background()
	s := policyServer(t, "", Policy{})
	st := &fakeStamp{failures: 1}
	s.rt.opts.Stamp = st
	s.rt.graphs[s.g.Name] = s

	_, err := s.rt.Unstamp(ctx, s.g.Name)
	require.Error(t, err, "a failed removal is reported, for the caller to retry")
	before := time.Now()
	off, err := s.rt.Unstamp(ctx, s.g.Name)
	require.NoError(t, err)
	assert.False(t, off.Before(before), "off since the removal that worked")
	again, err := s.rt.Unstamp(ctx, s.g.Name)
	require.NoError(t, err)
	assert.Equal(t, off, again)
	assert.Equal(t, 2, st.removes, "removed once it worked, never again")

	plain := policyServer(t, "", Policy{})
	plain.rt.graphs[plain.g.Name] = plain
	off, err = plain.rt.Unstamp(ctx, plain.g.Name)
	require.NoError(t, err)
	assert.True(t, off.IsZero(), "no policy: nothing to wait out")
	off, err = plain.rt.Unstamp(ctx, "not-served")
	require.NoError(t, err)
	assert.True(t, off.IsZero())
}
