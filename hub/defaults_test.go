package hub

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The field manager documented here is the one the hub writes with.
func TestDefaultFieldManagerIsDocumented(t *testing.T) {
	assert.Equal(t, "fleetgraph", DefaultFieldManager)
	assert.Equal(t, DefaultFieldManager, Options{}.withDefaults().FieldManager)
}
