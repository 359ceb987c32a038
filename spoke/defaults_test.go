package spoke

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fleetgraph/fleetgraph/internal/instance"
	internal "github.com/fleetgraph/fleetgraph/internal/spoke"
)

// The defaults this package documents are the ones the runtime fills in
// (the constants are the engine's), and the names it documents are the
// ones the runtime writes.
func TestDocumentedDefaultsAreTheRuntimes(t *testing.T) {
	assert.Equal(t, instance.ConditionResourcesWatched, ConditionResourcesWatched)
	assert.Equal(t, string(internal.RemovalFinalize), string(RemovalFinalize))
	assert.Equal(t, string(internal.RemovalRelease), string(RemovalRelease))

	rt := New(Options{})
	assert.Equal(t, 8, rt.Workers(), "New fills the documented default in")
}
