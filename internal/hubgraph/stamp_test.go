package hubgraph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/fleetgraph/fleetgraph/internal/contract"
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
