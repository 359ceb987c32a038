package spoke

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/internal/apicheck"
)

// The public API is defined here, where it is documented: no type alias
// (of an internal type or any other), and no exported constant or variable
// that is only a name for one of internal/'s, so that go doc shows every
// field, value and default. The Default constants are the engine's,
// declared once where they are filled in; their comments state the values.
func TestThePublicAPIIsDefinedHere(t *testing.T) {
	found, err := apicheck.Findings(".", apicheck.Options{AnyAlias: true, InternalValues: true, EngineDefaults: true})
	require.NoError(t, err)
	assert.Empty(t, found)
}
