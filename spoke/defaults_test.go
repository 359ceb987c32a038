package spoke

import (
	"testing"

	"github.com/stretchr/testify/assert"

	internal "github.com/fleetgraph/fleetgraph/internal/spoke"
)

// The defaults this package documents are the ones the runtime fills in,
// and the names it documents are the ones the runtime writes.
func TestDocumentedDefaultsAreTheRuntimes(t *testing.T) {
	assert.Equal(t, internal.DefaultWorkers, DefaultWorkers)
	assert.Equal(t, internal.DefaultItemConcurrency, DefaultItemConcurrency)
	assert.Equal(t, internal.DefaultFieldManager, DefaultFieldManager)
	assert.Equal(t, internal.DefaultCallTimeout, DefaultCallTimeout)
	assert.Equal(t, internal.DefaultResync, DefaultResync)
	assert.Equal(t, internal.DefaultOrphanGrace, DefaultOrphanGrace)
	assert.Equal(t, internal.ConditionResourcesWatched, ConditionResourcesWatched)
	assert.Equal(t, string(internal.RemovalFinalize), string(RemovalFinalize))
	assert.Equal(t, string(internal.RemovalRelease), string(RemovalRelease))

	rt := New(Options{})
	assert.Equal(t, DefaultWorkers, rt.Workers(), "New fills the defaults in")
}
