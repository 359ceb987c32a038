//go:build integration

package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The quickstart runs end to end, as `make quickstart` runs it, and prints a
// fleet table in which every spoke has its CRD established and one ready
// WebApp.
func TestQuickstartRunsEndToEnd(t *testing.T) {
	fgtesting.SetupLogs()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, options{spokes: 2}), out.String())
	for _, spoke := range []string{"spoke-1", "spoke-2"} {
		assert.Regexp(t, regexp.MustCompile(`(?m)^`+spoke+`\s+Established\s+1\s+1\s*$`), out.String())
	}
	assert.Contains(t, out.String(), "Every WebApp is ACTIVE")
}
