package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHubCRDsAreNamedAsTheirConstants(t *testing.T) {
	assert.Equal(t, GraphRevisionCRDName, GraphRevisionCRD().Name)
	assert.Equal(t, "graphrevision", GraphRevisionCRD().Spec.Names.Singular)
	assert.Equal(t, GraphRolloutCRDName, GraphRolloutCRD().Name)
	assert.Equal(t, GraphRolloutKind+"List", GraphRolloutCRD().Spec.Names.ListKind)
	assert.NotNil(t, GraphRolloutCRD().Spec.Versions[0].Subresources.Status, "the hub writes status through /status")
}
