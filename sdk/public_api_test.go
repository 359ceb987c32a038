package sdk

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/internal/apicheck"
)

// The façade may name the public hub's and apis' types, but none of
// internal/'s: an edit under internal/ must not change the public API
// unseen, and go doc must show every field and default.
func TestNoPublicTypeAliasesAnInternalOne(t *testing.T) {
	found, err := apicheck.Findings(".", apicheck.Options{})
	require.NoError(t, err)
	assert.Empty(t, found)
}
