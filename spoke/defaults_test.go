package spoke

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fleetgraph/fleetgraph/internal/instance"
	internal "github.com/fleetgraph/fleetgraph/internal/spoke"
)

// The defaults this package documents are the ones the runtime fills in,
// and the names it documents are the ones the runtime writes.
func TestDocumentedDefaultsAreTheRuntimes(t *testing.T) {
	assert.Equal(t, instance.DefaultWorkers, DefaultWorkers)
	assert.Equal(t, instance.DefaultItemConcurrency, DefaultItemConcurrency)
	assert.Equal(t, instance.DefaultFieldManager, DefaultFieldManager)
	assert.Equal(t, instance.DefaultCallTimeout, DefaultCallTimeout)
	assert.Equal(t, instance.DefaultResync, DefaultResync)
	assert.Equal(t, instance.DefaultOrphanGrace, DefaultOrphanGrace)
	assert.Equal(t, instance.DefaultClusterLabelsPoll, DefaultClusterLabelsPoll)
	assert.Equal(t, instance.ConditionResourcesWatched, ConditionResourcesWatched)
	assert.Equal(t, string(internal.RemovalFinalize), string(RemovalFinalize))
	assert.Equal(t, string(internal.RemovalRelease), string(RemovalRelease))

	rt := New(Options{})
	assert.Equal(t, DefaultWorkers, rt.Workers(), "New fills the defaults in")
}
