package hub

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// The hub writes CRDs and policies with the field manager the instance
// engine writes children with: the one default, documented here too.
func TestDefaultFieldManagerIsTheEngines(t *testing.T) {
	assert.Equal(t, instance.DefaultFieldManager, DefaultFieldManager)
}
